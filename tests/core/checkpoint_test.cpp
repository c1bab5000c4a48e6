// The restricted unpickler and the torch.save checkpoint reader (issue 18 item 6): every torch.save layout of a
// state dict (plain OrderedDict with _metadata and views of shared storages, one-item dicts written with SETITEM,
// {'state_dict': {...}}, a full Lightning checkpoint with optimizer state, callbacks and hyper-parameters) reads
// back exactly; anything that would run code, and damaged or absurd files, are refused with a clear message.
// The checkpoints are written by tests/data/make_checkpoints.py with Python's own pickle module, exactly as
// torch.save lays them out (python3 is installed by tools/install-deps.sh); the hostile ones are built here.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/checkpoint.h"
#include "core/io/pickle.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

fs::path corpus_dir() {
  static const fs::path dir = [] {
    const fs::path out = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / ("checkpoints_" + std::to_string(::getpid()));
    fs::remove_all(out);
    const std::string command = "python3 '" + std::string(TRACKSCOPE_SOURCE_DIR) +
                                "/tests/data/make_checkpoints.py' corpus '" + out.string() + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return out;
  }();
  return dir;
}

std::vector<double> values_of(const CheckpointTensor& t) {
  const size_t size = dtype_size_bytes(t.dtype);
  std::vector<double> values;
  for (size_t i = 0; i < t.data.size(); i += size) {
    const std::byte* p = t.data.data() + i;
    switch (t.dtype) {
      case TensorDtype::f32: {
        float v;
        std::memcpy(&v, p, 4);
        values.push_back(v);
        break;
      }
      case TensorDtype::f64: {
        double v;
        std::memcpy(&v, p, 8);
        values.push_back(v);
        break;
      }
      case TensorDtype::bf16: {
        uint32_t bits = 0;
        std::memcpy(reinterpret_cast<char*>(&bits) + 2, p, 2);
        float v;
        std::memcpy(&v, &bits, 4);
        values.push_back(v);
        break;
      }
      case TensorDtype::f16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
        const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
        values.push_back((h & 0x8000) ? -magnitude : magnitude);
        break;
      }
      case TensorDtype::i64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        values.push_back(static_cast<double>(v));
        break;
      }
      case TensorDtype::boolean: values.push_back(std::to_integer<int>(*p)); break;
      default: ADD_FAILURE() << "dtype not covered by the test";
    }
  }
  return values;
}

TEST(Checkpoint, EveryTorchSaveLayoutReadsBackExactly) {
  std::ifstream in(corpus_dir() / "manifest.json");
  ASSERT_TRUE(in) << "make_checkpoints.py did not run";
  const nlohmann::json manifest = nlohmann::json::parse(in);
  ASSERT_EQ(manifest.size(), 4u);
  for (const auto& [file, expected] : manifest.items()) {
    SCOPED_TRACE(file);
    Expected<Checkpoint> checkpoint = read_checkpoint(corpus_dir() / file);
    ASSERT_TRUE(checkpoint) << checkpoint.status().message();
    ASSERT_EQ(checkpoint->tensors.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const CheckpointTensor& t = checkpoint->tensors[i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.name, expected[i]["name"].get<std::string>());
      EXPECT_EQ(dtype_name(t.dtype), expected[i]["dtype"].get<std::string>());
      EXPECT_EQ(t.shape, expected[i]["shape"].get<std::vector<int64_t>>());
      EXPECT_EQ(values_of(t), expected[i]["values"].get<std::vector<double>>());
    }
  }
  Expected<Checkpoint> lightning = read_checkpoint(corpus_dir() / "lightning.ckpt");
  ASSERT_TRUE(lightning);
  EXPECT_EQ(lightning->layout, "Lightning checkpoint (state_dict)");
  EXPECT_NE(std::find(lightning->other_entries.begin(), lightning->other_entries.end(), "optimizer_states"),
            lightning->other_entries.end());
  // The same bytes from memory (the fuzzer's entry point) give the same result.
  std::ifstream file(corpus_dir() / "plain.ckpt", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  Expected<Checkpoint> from_memory = parse_checkpoint(bytes, "plain.ckpt");
  ASSERT_TRUE(from_memory) << from_memory.status().message();
  EXPECT_EQ(from_memory->tensors.size(), 9u);
}

TEST(Checkpoint, CodeAndOtherFormatsAreRefusedWithAClearMessage) {
  Expected<Checkpoint> evil = read_checkpoint(corpus_dir() / "evil.ckpt");
  ASSERT_FALSE(evil);
  EXPECT_EQ(evil.status().code(), StatusCode::unsupported);
  EXPECT_NE(evil.status().message().find("system"), std::string::npos) << evil.status().message();
  EXPECT_NE(evil.status().message().find("never runs code"), std::string::npos) << evil.status().message();
  EXPECT_FALSE(fs::exists(corpus_dir() / "pwned"));

  Expected<Checkpoint> script = read_checkpoint(corpus_dir() / "torchscript.ckpt");
  ASSERT_FALSE(script);
  EXPECT_NE(script.status().message().find("TorchScript"), std::string::npos) << script.status().message();
  Expected<Checkpoint> big = read_checkpoint(corpus_dir() / "big_endian.ckpt");
  ASSERT_FALSE(big);
  EXPECT_NE(big.status().message().find("endian"), std::string::npos) << big.status().message();
  Expected<Checkpoint> legacy = read_checkpoint(corpus_dir() / "legacy.ckpt");
  ASSERT_FALSE(legacy);
  EXPECT_EQ(legacy.status().code(), StatusCode::corrupt_data);
  EXPECT_EQ(read_checkpoint(corpus_dir() / "absent.ckpt").status().code(), StatusCode::not_found);
}

TEST(Checkpoint, DetectsWhatAWeightsFileIs) {
  auto kind = [](std::string head, uint64_t size) {
    return detect_weights_file(std::as_bytes(std::span(head.data(), head.size())), size);
  };
  EXPECT_EQ(kind("PK\x03\x04rest", 100), WeightsFileKind::torch_zip);
  EXPECT_EQ(kind(std::string("\x80\x02}q\x00.", 6), 6), WeightsFileKind::torch_legacy);
  EXPECT_EQ(kind(std::string("\x02\x00\x00\x00\x00\x00\x00\x00{}", 10), 10), WeightsFileKind::safetensors);
  EXPECT_EQ(kind(std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10), 10), WeightsFileKind::unknown);
  const std::string random("\x3f\xa2\x00\x17garbage", 11);
  const std::string message =
      describe_unknown_weights_file("model.ckpt", std::as_bytes(std::span(random.data(), random.size())));
  EXPECT_NE(message.find("not a PyTorch checkpoint"), std::string::npos) << message;
  EXPECT_NE(message.find("3f a2 00 17"), std::string::npos) << message;
  EXPECT_EQ(message.find("safetensors file:"), std::string::npos) << "not called a bad safetensors file";
}

// ---- hand-built pickles and archives ----------------------------------------------------------------------------

struct Pickle {
  std::string bytes = "\x80\x02";
  Pickle& op(char c) {
    bytes += c;
    return *this;
  }
  Pickle& raw(const std::string& s) {
    bytes += s;
    return *this;
  }
  Pickle& str(const std::string& s) {
    bytes += 'X';
    const uint32_t n = static_cast<uint32_t>(s.size());
    bytes.append(reinterpret_cast<const char*>(&n), 4);
    bytes += s;
    return *this;
  }
  Pickle& int1(uint8_t v) {
    bytes += 'K';
    bytes += static_cast<char>(v);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) { return raw("c" + module + "\n" + name + "\n"); }
  // ('storage', torch.FloatStorage, key, 'cpu', numel) BINPERSID
  Pickle& storage(const std::string& type, const std::string& key, uint8_t numel) {
    op('(').str("storage").global("torch", type).str(key).str("cpu").int1(numel).op('t').op('Q');
    return *this;
  }
  // _rebuild_tensor_v2(<storage pushed by `storage`>, offset, shape, stride, False, OrderedDict())
  Pickle& tensor(const std::string& key, uint8_t numel, uint8_t offset, std::vector<uint8_t> shape,
                 std::vector<uint8_t> stride, const std::string& type = "FloatStorage") {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    storage(type, key, numel).int1(offset);
    op('(');
    for (uint8_t s : shape) int1(s);
    op('t').op('(');
    for (uint8_t s : stride) int1(s);
    op('t').op('\x89').global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
    return *this;
  }
  std::string done() { return bytes + "."; }
};

std::string zip_of(const std::vector<std::pair<std::string, std::string>>& members) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(buffer);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  for (const auto& [name, data] : members) {
    zip_source_t* member = zip_source_buffer(archive, data.data(), data.size(), 0);
    const zip_int64_t index = zip_file_add(archive, name.c_str(), member, 0);
    zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
  }
  EXPECT_EQ(zip_close(archive), 0);
  zip_stat_t stat;
  zip_source_stat(buffer, &stat);
  std::string bytes(static_cast<size_t>(stat.size), '\0');
  zip_source_open(buffer);
  zip_source_read(buffer, bytes.data(), stat.size);
  zip_source_close(buffer);
  zip_source_free(buffer);
  return bytes;
}

std::string floats(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

Expected<Checkpoint> checkpoint_of(const std::string& pickle, const std::string& storage_0 = floats({1, 2, 3, 4})) {
  return parse_checkpoint(zip_of({{"archive/data.pkl", pickle}, {"archive/data/0", storage_0}}), "test.ckpt");
}

void expect_refused(const Expected<Checkpoint>& result, StatusCode code, const std::string& words) {
  ASSERT_FALSE(result) << words;
  EXPECT_EQ(result.status().code(), code) << result.status().message();
  EXPECT_NE(result.status().message().find(words), std::string::npos) << result.status().message();
}

TEST(Checkpoint, HandBuiltStateDictsAndViews) {
  // {'w': tensor(storage 0, offset 1, shape (2,), stride (2,))} -> elements 1 and 3 of the storage.
  Pickle p;
  p.op('}').str("w").tensor("0", 4, 1, {2}, {2}).op('s');
  Expected<Checkpoint> strided = checkpoint_of(p.done());
  ASSERT_TRUE(strided) << strided.status().message();
  EXPECT_EQ(values_of(strided->tensors.at(0)), (std::vector<double>{2, 4}));
  // A repeated key keeps its first position and its last value, as a Python dict does.
  Pickle twice;
  twice.op('}').op('(').str("a").tensor("0", 4, 0, {1}, {1}).str("b").tensor("0", 4, 1, {1}, {1});
  twice.str("a").tensor("0", 4, 3, {1}, {1}).op('u');
  Expected<Checkpoint> repeated = checkpoint_of(twice.done());
  ASSERT_TRUE(repeated) << repeated.status().message();
  ASSERT_EQ(repeated->tensors.size(), 2u);
  EXPECT_EQ(repeated->tensors[0].name, "a");
  EXPECT_EQ(values_of(repeated->tensors[0]), (std::vector<double>{4}));
}

TEST(Checkpoint, TensorsOutsideTheirStorageAndAbsurdSizesAreRefused) {
  auto one = [](uint8_t numel, uint8_t offset, std::vector<uint8_t> shape, std::vector<uint8_t> stride) {
    Pickle p;
    p.op('}').str("w").tensor("0", numel, offset, std::move(shape), std::move(stride)).op('s');
    return p.done();
  };
  expect_refused(checkpoint_of(one(4, 3, {2}, {1})), StatusCode::corrupt_data, "reaches element 4");
  expect_refused(checkpoint_of(one(4, 0, {200, 200}, {0, 0})), StatusCode::unsupported, "more elements than");
  expect_refused(checkpoint_of(one(8, 0, {2}, {1})), StatusCode::corrupt_data, "truncated");  // record of 4 floats
  // A storage the archive does not have.
  Pickle missing;
  missing.op('}').str("w").tensor("7", 4, 0, {4}, {1}).op('s');
  expect_refused(checkpoint_of(missing.done()), StatusCode::corrupt_data, "data/7 is missing");
  // A complex storage is not a dtype the model uses.
  Pickle complex;
  complex.op('}').str("w").tensor("0", 2, 0, {2}, {1}, "ComplexFloatStorage").op('s');
  expect_refused(checkpoint_of(complex.done()), StatusCode::unsupported, "ComplexFloatStorage");
  // Not a dict of tensors.
  Pickle list;
  list.op(']').str("x").op('a');
  expect_refused(checkpoint_of(list.done()), StatusCode::unsupported, "a list of 1 items");
  Pickle no_tensors;
  no_tensors.op('}').str("epoch").int1(3).op('s');
  expect_refused(checkpoint_of(no_tensors.done()), StatusCode::unsupported, "entry 'epoch' of the state dict is a int");
}

Expected<pickle::Document> unpickled(const std::string& bytes) { return pickle::unpickle(bytes, "test.ckpt"); }

TEST(Unpickler, RefusesEverythingThatWouldRunCode) {
  struct Case {
    std::string name, bytes, words;
  };
  const std::vector<Case> cases = {
      {"os.system", Pickle().global("os", "system").str("rm -rf /").op('\x85').op('R').done(), "os.system"},
      {"builtins.eval", Pickle().global("builtins", "eval").done(), "builtins.eval"},
      {"numpy", Pickle().global("numpy.core.multiarray", "_reconstruct").done(), "numpy.core.multiarray._reconstruct"},
      {"stack global", Pickle().str("subprocess").str("Popen").raw("\x93").done(), "subprocess.Popen"},
      {"torch script type", Pickle().global("__torch__.Model", "Model").done(), "does not support"},
      {"calling a dtype", Pickle().global("torch", "float32").op(')').op('R').done(), "calls torch.float32"},
      {"NEWOBJ of a storage", Pickle().global("torch", "FloatStorage").op(')').raw("\x81").done(), "FloatStorage"},
      {"BUILD on a list", Pickle().op(']').op('}').op('b').done(), "sets the state of a list"},
      {"INST", Pickle().raw("(ios\nsystem\n").done(), "INST/OBJ"},
      {"extension registry", Pickle().raw("\x82\x01").done(), "extension registry"},
      {"defaultdict of a function",
       Pickle()
           .global("collections", "defaultdict")
           .global("torch._utils", "_rebuild_tensor_v2")
           .op('\x85')
           .op('R')
           .done(),
       "factory"},
      {"persistent id that is not a storage", Pickle().str("evil").op('Q').done(), "persistent id"},
  };
  for (const Case& c : cases) {
    Expected<pickle::Document> result = unpickled(c.bytes);
    ASSERT_FALSE(result) << c.name;
    EXPECT_EQ(result.status().code(), StatusCode::unsupported) << c.name << ": " << result.status().message();
    EXPECT_NE(result.status().message().find(c.words), std::string::npos)
        << c.name << ": " << result.status().message();
  }
}

TEST(Unpickler, DamagedStreamsAndLimits) {
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"truncated string", std::string("\x80\x02X\xff\xff\xff\x7f", 8)},
      {"no STOP", Pickle().op('}').bytes},
      {"empty stack", Pickle().op('s').done()},
      {"memo read before write", Pickle().raw("h\x05").done()},
      {"unknown opcode", Pickle().raw("\xff").done()},
      {"POP_MARK without mark", Pickle().op('1').done()},
  };
  for (const auto& [name, bytes] : damaged) {
    Expected<pickle::Document> result = unpickled(bytes);
    ASSERT_FALSE(result) << name;
    EXPECT_EQ(result.status().code(), StatusCode::corrupt_data) << name << ": " << result.status().message();
  }
  // An integer beyond 64 bits is kept opaque; a cycle (a list inside itself) and deep nesting are plain data.
  Expected<pickle::Document> big = unpickled(Pickle().raw("\x8a\x09" + std::string(9, '\x7f')).done());
  ASSERT_TRUE(big) << big.status().message();
  EXPECT_EQ(big->node(big->root()).kind, pickle::Kind::big_integer);
  Expected<pickle::Document> cycle = unpickled(Pickle().op(']').raw(std::string("q\x00h\x00", 4)).op('a').done());
  ASSERT_TRUE(cycle) << cycle.status().message();
  EXPECT_EQ(cycle->node(cycle->root()).items.at(0), cycle->root());
  std::string deep = "\x80\x02";
  for (int i = 0; i < 200000; ++i) deep += "]";
  for (int i = 0; i < 199999; ++i) deep += "a";
  Expected<pickle::Document> nested = unpickled(deep + ".");
  ASSERT_TRUE(nested) << nested.status().message();
  // BUILD repeated on one Namespace with a big state grows it quadratically in the stream's length: bounded.
  Pickle quadratic;
  quadratic.global("argparse", "Namespace").op(')').raw("\x81");
  quadratic.op('}').raw(std::string("q\x01", 2)).op('(');
  for (int i = 0; i < 1000; ++i) quadratic.str(std::to_string(i)).int1(1);
  quadratic.op('u').op('b');
  for (int i = 0; i < 5000; ++i) quadratic.raw(std::string("h\x01", 2)).op('b');
  Expected<pickle::Document> grown = unpickled(quadratic.done());
  ASSERT_FALSE(grown);
  EXPECT_EQ(grown.status().code(), StatusCode::invalid_argument) << grown.status().message();
  EXPECT_NE(grown.status().message().find("container entries"), std::string::npos) << grown.status().message();
  // More values than a weights file has: refused, not allocated without bound.
  std::string many = "\x80\x02";
  for (size_t i = 0; i <= pickle::kMaxPickleNodes; ++i) many += "N";
  Expected<pickle::Document> limit = unpickled(many + ".");
  ASSERT_FALSE(limit);
  EXPECT_EQ(limit.status().code(), StatusCode::invalid_argument) << limit.status().message();
}

}  // namespace
}  // namespace trackscope::core::io
