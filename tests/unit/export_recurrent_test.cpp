// Recurrent models exported for training without constant folding: torch writes an LSTM's
// or GRU's W, R, B as Unsqueeze(Concat(Slice(torch parameter), ...)) (the gates reordered),
// so the torch parameters are read through ops that only rearrange them (OpTraits::
// rearranges). They must train, exactly as the W, R, B of the folded export of the same
// module do (tests/fixtures/export/gen_export_models.py).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/model_view.h"
#include "converter/import.h"
#include "runtime/param_roles.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"

using namespace dl;

namespace {

const std::string kExport = std::string(DL_SOURCE_DIR) + "/tests/fixtures/export/";

// 16 sequences of 5 steps of 3 features; the class is the sign of the last step's first one.
std::string data_csv() {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("recurrent_" + std::to_string(getpid()) + ".csv")).string();
  std::ofstream out(path);
  for (int r = 0; r < 16; ++r) {
    float last = 0;
    for (int k = 0; k < 15; ++k) {
      const float v = float(std::sin(0.9 * r + 1.7 * k));
      out << v << ",";
      if (k == 12) last = v;
    }
    out << (last > 0 ? 1 : 0) << "\n";
  }
  return path;
}

rt::TrainResult train(const ir::Model& m, const std::string& csv) {
  rt::TrainConfig config = rt::config_from_metadata(m.metadata, m.path);
  rt::DatasetSpec spec;
  spec.sample_shape = {5, 3};
  spec.output_width = 2;
  spec.encoding = rt::DatasetSpec::Encoding::kSparse;
  rt::Trainer trainer(m, config, rt::load_dataset(csv, spec), rt::Dataset{});
  return trainer.run();
}

}  // namespace

TEST_CASE("recurrent exports without constant folding train the torch parameters like the folded W, R, B") {
  const std::string csv = data_csv();
  for (const char* cell : {"lstm", "gru"}) {
    INFO(cell);
    const ir::Model unfolded = conv::import_model(kExport + cell + "_unfolded.onnx");
    const ir::Model folded = conv::import_model(kExport + cell + "_folded.onnx");
    const auto params = rt::model_params(unfolded);
    for (const char* name : {"rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0"}) {
      INFO(name);
      REQUIRE(params.count(name));
      CHECK(params.at(name).trainable());
    }
    CHECK(params.at("rnn.weight_ih_l0").role.kind == rt::ParamRole::Kind::kWeight);
    CHECK(params.at("rnn.bias_hh_l0").role.kind == rt::ParamRole::Kind::kBias);
    // Both count every value: the folded W, R, B hold the torch parameters reordered.
    std::ostringstream a, b;
    cli::print_inspect(unfolded, a);
    cli::print_inspect(folded, b);
    auto total = [](const std::string& text) {
      const size_t at = text.find("parameters: ");
      return at == std::string::npos ? std::string() : text.substr(at + 12, text.find(' ', at + 12) - at - 12);
    };
    INFO(a.str());
    CHECK(!total(a.str()).empty());
    CHECK(total(a.str()) == total(b.str()));
    // The recurrent node's layer holds the torch parameters it reads through the Slices.
    CHECK(a.str().find("layers (2):") != std::string::npos);

    const rt::TrainResult u = train(unfolded, csv), f = train(folded, csv);
    REQUIRE(u.loss.size() == f.loss.size());
    REQUIRE(u.loss.size() >= 8);
    for (size_t k = 0; k < u.loss.size(); ++k) CHECK(u.loss[k] == doctest::Approx(f.loss[k]).epsilon(1e-5));
    CHECK(u.loss.back() != doctest::Approx(u.loss.front()).epsilon(1e-4));  // it trained
  }
  std::remove(csv.c_str());
}
