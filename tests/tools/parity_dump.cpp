// dl_parity_dump: trains a PyTorch parity fixture exactly as the parity tests do
// (tests/unit/pytorch_parity_cnn_test.cpp for cnn/*.onnx.gz, pytorch_parity_train_test.cpp
// for plain .onnx: import, gunzip when the name ends in .gz, adapt_export,
// config_from_metadata, parity_spec, rt::Trainer) and dumps, at chosen iterations, every
// float32 forward step output, every parameter's gradient and its weight before the update,
// and every step's loss. tests/fixtures/parity/parity_dump.py reads the dump and compares it
// with torch (float64 and float32) or with another build's dump.
//
//   dl_parity_dump MODEL DATA.csv --out FILE [--iterations 0,6] [--lr X] [--steps N] [--threads N]
//
// --iterations: 0-based, comma-separated ("" for losses only; default 0). --steps: steps to
// train (default: the model's epochs, as the test trains it). --lr overrides the model's
// learning rate. --threads: compute threads (results are the same bits for any count).
//
// Format (little-endian), version 1:
//   header  8 bytes "DLPDUMP\0", uint32 version (1), uint32 0
//   record  uint8 kind, int64 iteration, uint32 name length, name bytes (UTF-8),
//           uint32 rank, int64 dims[rank], then the data:
//     'F' forward step output   float32 x prod(dims); name: the graph value's name
//     'G' parameter gradient    float32 x prod(dims); name: the initializer's name
//     'W' weight before update  float32 x prod(dims)
//     'L' loss of the step      rank 0, one float64 (the trainer's double); name "loss"
//     'S' program step          no data; iteration: the step's index in the program (written
//                               once, before training); name: op type, then each input
//                               name, then "\x1e", then each output name, each field
//                               followed by "\x1f" ("" for an omitted optional value)
// Records come in the order the run makes them. The file is written to a temporary file
// and renamed (io::AtomicFile: a non-regular file at --out is refused, never replaced).
// Exit 0 on success, 2 on a bad option, model, data file or output path.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/import.h"
#include "io/atomic_file.h"
#include "runtime/export_adapt.h"
#include "runtime/threads.h"
#include "runtime/trainer.h"
#include "tests/unit/parity_util.h"

namespace {

using namespace dl;

class DumpWriter {
 public:
  explicit DumpWriter(const std::string& path) : file_(path) {
    static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE float32/float64");
    const uint32_t one = 1;
    if (*reinterpret_cast<const unsigned char*>(&one) != 1) throw InternalError("dl_parity_dump: big-endian host");
    file_.write("DLPDUMP\0", 8);
    put(uint32_t{1}), put(uint32_t{0});
    flush();
  }
  void record(char kind, int64_t iteration, const std::string& name, const rt::Shape& shape, const void* data,
              size_t bytes) {
    put(static_cast<uint8_t>(kind)), put(iteration), put(static_cast<uint32_t>(name.size()));
    head_ += name;
    put(static_cast<uint32_t>(shape.size()));
    for (int64_t d : shape) put(d);
    flush();
    if (bytes) file_.write(static_cast<const char*>(data), bytes);
  }
  void tensor(char kind, int64_t iteration, const std::string& name, const rt::Tensor& t) {
    if (t.dtype() == rt::DType::kFloat32) record(kind, iteration, name, t.shape(), t.f(), sizeof(float) * t.numel());
  }
  void commit() { file_.commit(); }

 private:
  template <class T>
  void put(T v) { head_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void flush() { file_.write(head_), head_.clear(); }
  io::AtomicFile file_;
  std::string head_;
};

// Records the chosen iterations' forward outputs (observer), gradients, weights and every
// loss (listener), and stops after `steps` iterations.
class Recorder : public rt::Observer, public rt::TrainListener {
 public:
  Recorder(DumpWriter& out, std::set<int64_t> iterations, int64_t steps)
      : out_(out), iterations_(std::move(iterations)), steps_(steps) {}
  void on_train_begin(const rt::ExecutionGraph& graph) override {
    const auto& steps = graph.steps();
    for (size_t k = 0; k < steps.size(); ++k) {
      const ir::Node& node = *steps[k].node;
      std::string fields = node.op_type + '\x1f';
      for (const auto& in : node.inputs) fields += in + '\x1f';
      fields += "\x1e\x1f";
      for (const auto& o : node.outputs) fields += o + '\x1f';
      out_.record('S', static_cast<int64_t>(k), fields, {}, nullptr, 0);
    }
  }
  void on_batch_begin(const rt::IterationInfo& info) override {
    iteration_ = info.iteration;
    dumping_ = iterations_.count(iteration_) > 0;
  }
  // Names from the step's node (its outputs line up with the step's): the graph of the
  // last partial batch has slots of its own.
  void on_forward(size_t, const rt::Step& step) override {
    if (!dumping_) return;
    for (size_t k = 0; k < step.fwd.out.size() && k < step.node->outputs.size(); ++k)
      if (step.fwd.out[k]) out_.tensor('F', iteration_, step.node->outputs[k], *step.fwd.out[k]);
  }
  void before_update(const rt::ExecutionGraph& graph, const rt::IterationInfo& info) override {
    if (!dumping_) return;
    for (const rt::Param& p : const_cast<rt::ExecutionGraph&>(graph).params()) {
      out_.tensor('W', info.iteration, p.name, *p.value);
      if (p.grad) out_.tensor('G', info.iteration, p.name, *p.grad);
    }
  }
  void after_update(const rt::ExecutionGraph&, const rt::IterationInfo& info) override {
    out_.record('L', info.iteration, "loss", {}, &info.loss, sizeof info.loss);
    done_ = info.iteration + 1;
  }
  bool should_stop() override { return done_ >= steps_; }

 private:
  DumpWriter& out_;
  std::set<int64_t> iterations_;
  int64_t steps_, iteration_ = -1, done_ = 0;
  bool dumping_ = false;
};

std::set<int64_t> parse_iterations(const std::string& text) {
  std::set<int64_t> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || v < 0)
      throw ConfigError("--iterations: '" + item + "' is not a non-negative integer (e.g. --iterations 0,6)");
    out.insert(v);
  }
  return out;
}

int run(const std::string& model_path, const std::string& data_path, const std::string& out_path,
        const std::string& iteration_list, double lr, int64_t steps, int threads) {
  const std::set<int64_t> iterations = parse_iterations(iteration_list);
  if (threads > 0) rt::set_compute_threads(threads);
  const bool gz = model_path.size() > 3 && model_path.compare(model_path.size() - 3, 3, ".gz") == 0;
  ir::Model model = gz ? conv::import_model_bytes(test::gunzip(model_path), model_path) : conv::import_model(model_path);
  rt::adapt_export(model);
  rt::TrainConfig config = rt::config_from_metadata(model.metadata, model_path);
  if (lr > 0) config.optimizer.learning_rate = lr;
  rt::Dataset data = rt::load_dataset(data_path, test::parity_spec(model, config));
  if (data.n < 1) throw DataError(data_path + ": no rows");
  const int64_t batches = (data.n + config.batch_size - 1) / config.batch_size;
  if (steps == 0) steps = config.epochs * batches;
  config.epochs = (steps + batches - 1) / batches;
  if (!iterations.empty() && *iterations.rbegin() >= steps)
    throw ConfigError("--iterations: iteration " + std::to_string(*iterations.rbegin()) + " is beyond the run (" +
                      std::to_string(steps) + " steps, 0.." + std::to_string(steps - 1) + "; see --steps)");
  DumpWriter out(out_path);  // refuses a non-regular --out before training
  Recorder recorder(out, iterations, steps);
  rt::Trainer trainer(model, config, std::move(data), rt::Dataset{});
  trainer.set_observer(&recorder);
  trainer.add_listener(&recorder);
  const rt::TrainResult result = trainer.run();
  if (result.iterations != steps)
    throw InternalError("trained " + std::to_string(result.iterations) + " steps, not " + std::to_string(steps));
  out.commit();
  std::cout << out_path << ": " << steps << " steps at learning rate ";
  if (config.optimizer.learning_rate)
    std::cout << *config.optimizer.learning_rate;
  else
    std::cout << "(the optimizer's default)";
  std::cout << ", losses";
  for (double l : result.loss) std::cout << ' ' << l;
  std::cout << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dl_parity_dump: train a parity fixture as the parity tests do and dump its tensors"};
  std::string model, data, out, iterations = "0";
  double lr = 0;
  int64_t steps = 0;
  int threads = 0;
  app.add_option("MODEL", model, "The fixture (.onnx, or .onnx.gz)")->required()->check(CLI::ExistingFile);
  app.add_option("DATA", data, "Its CSV")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out, "The dump file to write")->required();
  app.add_option("--iterations", iterations, "0-based iterations to dump, comma-separated (\"\": losses only)");
  app.add_option("--lr", lr, "Learning rate instead of the model's");
  app.add_option("--steps", steps, "Steps to train (default: the model's epochs)");
  app.add_option("--threads", threads, "Compute threads (default: all cores)")->check(CLI::Range(1, 1024));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (app.count("--lr") && !(lr > 0)) {
    std::cerr << "dl_parity_dump: error: --lr must be a positive number\n";
    return 2;
  }
  if (app.count("--steps") && steps < 1) {
    std::cerr << "dl_parity_dump: error: --steps must be at least 1\n";
    return 2;
  }
  try {
    return run(model, data, out, iterations, lr, steps, threads);
  } catch (const dl::Error& e) {
    std::cerr << "dl_parity_dump: error: " << e.what() << "\n";
    return dl::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "dl_parity_dump: internal error: " << e.what() << "\n";
    return 3;
  }
}
