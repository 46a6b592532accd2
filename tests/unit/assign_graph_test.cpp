// The executor's gradient plan (ExecutionGraph::backward, Op::assigns_gradient) on whole
// models: every training parity fixture (CNNs with BatchNorm, autoencoders, embeddings,
// GRU/LSTM, LayerNorm + GELU, a TransformerEncoder, ...) trained twice, the second time
// with every step's input gradient buffers filled with NaN after each update, as stale
// values from the last iteration would be. An op that claims to write a whole gradient as
// its first writer but leaves an element would carry the NaN into the weights; a buffer
// the executor must zero and does not, likewise. The parameters come out bit-identical.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "converter/import.h"
#include "parity_util.h"
#include "runtime/export_adapt.h"
#include "runtime/trainer.h"

namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity";

struct Poison : dl::rt::TrainListener {
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo&) override {
    for (const dl::rt::Step& st : g.steps())
      for (dl::rt::Tensor* d : st.bwd.din)
        if (d && d->allocated() && d->dtype() == dl::rt::DType::kFloat32)
          std::fill(d->f(), d->f() + d->numel(), std::numeric_limits<float>::quiet_NaN());
  }
};

std::map<std::string, std::vector<float>> train(const std::string& name, bool poison) {
  dl::ir::Model model = dl::conv::import_model(kDir + "/" + name + ".onnx");
  dl::rt::adapt_export(model);
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 1;
  dl::rt::Dataset data = dl::rt::load_dataset(kDir + "/" + name + ".csv", dl::test::parity_spec(model, config));
  dl::rt::Trainer trainer(model, config, std::move(data), dl::rt::Dataset{});
  Poison p;
  if (poison) trainer.add_listener(&p);
  trainer.run();
  std::map<std::string, std::vector<float>> out;
  for (const auto& [key, t] : trainer.store()->values)
    if (t.dtype() == dl::rt::DType::kFloat32) out[key] = std::vector<float>(t.f(), t.f() + t.numel());
  return out;
}

}  // namespace

TEST_CASE("gradient plan: stale gradient buffers never reach the weights, on every parity model") {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".txt") continue;
    const std::string name = entry.path().stem().string();
    INFO("case " << name);
    const auto plain = train(name, false), poisoned = train(name, true);
    REQUIRE(plain.size() == poisoned.size());
    for (const auto& [key, v] : plain) {
      INFO("parameter " << key);
      const std::vector<float>& w = poisoned.at(key);
      REQUIRE(w.size() == v.size());
      int64_t differ = 0;
      for (size_t k = 0; k < v.size(); ++k) differ += !(w[k] == v[k]);
      CHECK(differ == 0);
    }
    ++cases;
  }
  CHECK(cases >= 33);
}
