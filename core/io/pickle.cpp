#include "core/io/pickle.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace trackscope::core::io::pickle {
namespace {

static_assert(std::endian::native == std::endian::little, "pickle integers are little-endian");

// What a known global means. Nothing is ever imported or called: each entry is interpreted by the code below.
enum class Known {
  ordered_dict,
  default_dict,
  attribute_dict,
  namespace_,
  rebuild_tensor_v2,
  rebuild_tensor,
  rebuild_parameter,
  rebuild_parameter_with_state,
  storage_type,
  torch_size,
  torch_device,
  codecs_encode,
  set,
  frozenset,
  bytearray,
  path,
  identity,      // LibTorch's pickler tags: restore_type_tag(value, type), build_intlist(list), ...
  builtin_type,  // a constant (a defaultdict's factory)
  torch_dtype,   // a constant
};

struct KnownGlobal {
  std::string_view module;
  std::string_view name;
  Known known;
};

constexpr std::array kKnownGlobals = {
    KnownGlobal{"collections", "OrderedDict", Known::ordered_dict},
    KnownGlobal{"collections", "defaultdict", Known::default_dict},
    KnownGlobal{"pytorch_lightning.utilities.parsing", "AttributeDict", Known::attribute_dict},
    KnownGlobal{"lightning.pytorch.utilities.parsing", "AttributeDict", Known::attribute_dict},
    KnownGlobal{"lightning.fabric.utilities.data", "AttributeDict", Known::attribute_dict},
    KnownGlobal{"lightning_fabric.utilities.data", "AttributeDict", Known::attribute_dict},
    KnownGlobal{"argparse", "Namespace", Known::namespace_},
    KnownGlobal{"torch._utils", "_rebuild_tensor_v2", Known::rebuild_tensor_v2},
    KnownGlobal{"torch._utils", "_rebuild_tensor", Known::rebuild_tensor},
    KnownGlobal{"torch._utils", "_rebuild_parameter", Known::rebuild_parameter},
    KnownGlobal{"torch._utils", "_rebuild_parameter_with_state", Known::rebuild_parameter_with_state},
    KnownGlobal{"torch", "Size", Known::torch_size},
    KnownGlobal{"torch", "device", Known::torch_device},
    KnownGlobal{"_codecs", "encode", Known::codecs_encode},
    KnownGlobal{"builtins", "set", Known::set},
    KnownGlobal{"builtins", "frozenset", Known::frozenset},
    KnownGlobal{"builtins", "bytearray", Known::bytearray},
    KnownGlobal{"__builtin__", "set", Known::set},
    KnownGlobal{"__builtin__", "frozenset", Known::frozenset},
    KnownGlobal{"__builtin__", "bytearray", Known::bytearray},
    KnownGlobal{"pathlib", "Path", Known::path},
    KnownGlobal{"pathlib", "PosixPath", Known::path},
    KnownGlobal{"pathlib", "WindowsPath", Known::path},
    KnownGlobal{"pathlib", "PurePosixPath", Known::path},
    KnownGlobal{"pathlib", "PureWindowsPath", Known::path},
    // Written by LibTorch's own pickler (torch::pickle_save): type annotations around plain values.
    KnownGlobal{"torch.jit._pickle", "restore_type_tag", Known::identity},
    KnownGlobal{"torch.jit._pickle", "build_intlist", Known::identity},
    KnownGlobal{"torch.jit._pickle", "build_doublelist", Known::identity},
    KnownGlobal{"torch.jit._pickle", "build_boollist", Known::identity},
    KnownGlobal{"torch.jit._pickle", "build_tensorlist", Known::identity},
};

constexpr std::array<std::string_view, 17> kStorageTypes = {
    "FloatStorage", "DoubleStorage", "HalfStorage",   "BFloat16Storage", "LongStorage",         "IntStorage",
    "ShortStorage", "CharStorage",   "ByteStorage",   "BoolStorage",     "ComplexFloatStorage", "ComplexDoubleStorage",
    "QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage", "UntypedStorage"};

constexpr std::array<std::string_view, 21> kTorchDtypes = {
    "float32", "float", "float64", "double", "float16", "half",      "bfloat16",   "int64",  "long",    "int32", "int",
    "int16",   "short", "int8",    "uint8",  "bool",    "complex64", "complex128", "cfloat", "cdouble", "uint16"};

constexpr std::array<std::string_view, 10> kBuiltinTypes = {"dict",  "list", "int",       "float", "str",
                                                            "tuple", "set",  "frozenset", "bool",  "bytes"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

std::optional<Known> known_global(std::string_view module, std::string_view name) {
  for (const KnownGlobal& g : kKnownGlobals) {
    if (g.module == module && g.name == name) return g.known;
  }
  if (module == "torch" && contains(kStorageTypes, name)) return Known::storage_type;
  if (module == "torch" && contains(kTorchDtypes, name)) return Known::torch_dtype;
  if ((module == "builtins" || module == "__builtin__") && contains(kBuiltinTypes, name)) return Known::builtin_type;
  return std::nullopt;
}

// Internal control flow: the first problem ends the reading.
struct Failure {
  Status status;
};

// Opcodes (Python's Lib/pickletools.py).
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloat = 'F',
  kInt = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLong = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kPersId = 'P',
  kBinPersId = 'Q',
  kReduce = 'R',
  kString = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicode = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kObj = 'o',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadonlyBuffer = 0x98,
};

// Appends the UTF-8 text as Latin-1 bytes (code points < 256), as _codecs.encode(text, 'latin1') does.
bool latin1_bytes(std::string_view utf8, std::string& out) {
  for (size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size()) {
      const auto d = static_cast<unsigned char>(utf8[i + 1]);
      if ((d & 0xC0) != 0x80) return false;
      const unsigned code = ((c & 0x1Fu) << 6) | (d & 0x3Fu);
      if (code < 0x80 || code > 0xFF) return false;
      out += static_cast<char>(code);
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::big_integer: return "int (beyond 64 bits)";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::bytes: return "bytes";
    case Kind::tuple: return "tuple";
    case Kind::list: return "list";
    case Kind::set: return "set";
    case Kind::dict: return "dict";
    case Kind::global: return "constant";
    case Kind::storage: return "storage";
    case Kind::tensor: return "tensor";
  }
  return "?";
}

std::optional<NodeId> Document::dict_get(NodeId dict, std::string_view key) const {
  const Node& d = node(dict);
  if (d.kind != Kind::dict) return std::nullopt;
  for (size_t i = d.items.size(); i >= 2; i -= 2) {
    const Node& k = node(d.items[i - 2]);
    if (k.kind == Kind::string && k.text == key) return d.items[i - 1];
  }
  return std::nullopt;
}

std::string Document::describe(NodeId id) const {
  const Node& n = node(id);
  switch (n.kind) {
    case Kind::dict: return fmt::format("a dict of {} entries", n.items.size() / 2);
    case Kind::list: return fmt::format("a list of {} items", n.items.size());
    case Kind::tuple: return fmt::format("a tuple of {} items", n.items.size());
    case Kind::global: return fmt::format("the constant {}", n.text);
    case Kind::string: return "a string";
    default: return fmt::format("a {}", to_string(n.kind));
  }
}

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& source) : in_(bytes), source_(source) {}

  Expected<Document> run() {
    try {
      read();
      return std::move(document_);
    } catch (const Failure& failure) {
      return failure.status;
    }
  }

 private:
  [[noreturn]] void damaged(const std::string& what) const {
    throw Failure{corrupt_data(
        fmt::format("'{}': the checkpoint's pickle is damaged at byte {}: {}", source_, opcode_at_, what))};
  }
  [[noreturn]] void refuse(const std::string& what) const {
    throw Failure{unsupported(
        fmt::format("'{}' was not loaded: its pickle {}. Trackscope reads only tensors and plain containers from "
                    "checkpoints and never runs code from a file; if you trust this file, convert it once in Python "
                    "(docs/converting-checkpoints.md)",
                    source_, what))};
  }

  // ---- input ----
  std::string_view take(uint64_t n) {
    if (n > in_.size() - position_)
      damaged(fmt::format("{} bytes announced, {} left (truncated?)", n, in_.size() - position_));
    const std::string_view out = in_.substr(position_, static_cast<size_t>(n));
    position_ += static_cast<size_t>(n);
    return out;
  }
  template <typename T>
  T take_le() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  uint8_t take_u8() { return static_cast<uint8_t>(take(1)[0]); }
  std::string_view take_line() {
    const size_t end = in_.find('\n', position_);
    if (end == std::string_view::npos) damaged("a text field has no end of line");
    const std::string_view line = in_.substr(position_, end - position_);
    position_ = end + 1;
    return line;
  }

  // ---- values ----
  NodeId add(Node node) {
    if (document_.nodes_.size() >= kMaxPickleNodes) {
      throw Failure{
          invalid_argument(fmt::format("'{}': the checkpoint's pickle holds more than {} values; a weights "
                                       "file holds a few thousand",
                                       source_, kMaxPickleNodes))};
    }
    document_.nodes_.push_back(std::move(node));
    return static_cast<NodeId>(document_.nodes_.size() - 1);
  }
  NodeId add_kind(Kind kind) {
    Node node;
    node.kind = kind;
    return add(std::move(node));
  }
  NodeId add_integer(int64_t value) {
    Node node;
    node.kind = Kind::integer;
    node.integer = value;
    return add(std::move(node));
  }
  NodeId add_text(Kind kind, std::string text) {
    Node node;
    node.kind = kind;
    node.text = std::move(text);
    return add(std::move(node));
  }
  Node& at(NodeId id) { return document_.nodes_[id]; }

  // Every entry stored in a container counts against kMaxPickleItems.
  void count_items(size_t added) {
    items_ += added;
    if (items_ > kMaxPickleItems) {
      throw Failure{invalid_argument(fmt::format("'{}': the checkpoint's pickle stores more than {} container entries",
                                                 source_, kMaxPickleItems))};
    }
  }

  void push(NodeId id) {
    if (stack_.size() >= kMaxPickleStack) {
      throw Failure{invalid_argument(
          fmt::format("'{}': the checkpoint's pickle stack grows beyond {} entries", source_, kMaxPickleStack))};
    }
    stack_.push_back(id);
  }
  NodeId pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) damaged("a value is taken from an empty stack");
    const NodeId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  NodeId top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) damaged("a value is taken from an empty stack");
    return stack_.back();
  }
  // The values above the topmost mark, which is removed.
  std::vector<NodeId> pop_mark() {
    if (marks_.empty()) damaged("no mark to pop to");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<NodeId> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  void memo_put(uint64_t index, NodeId id) {
    if (memo_.size() >= kMaxPickleStack && memo_.count(index) == 0) {
      throw Failure{invalid_argument(
          fmt::format("'{}': the checkpoint's pickle memo grows beyond {} entries", source_, kMaxPickleStack))};
    }
    memo_[index] = id;
  }
  NodeId memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) damaged(fmt::format("memo entry {} is read before it is written", index));
    return it->second;
  }

  const Node& expect(NodeId id, Kind kind, const char* what) {
    const Node& node = at(id);
    if (node.kind != kind)
      damaged(fmt::format("{} must be a {}, not {}", what, to_string(kind), document_.describe(id)));
    return node;
  }
  int64_t expect_integer(NodeId id, const char* what) { return expect(id, Kind::integer, what).integer; }

  // ---- globals and calls ----
  NodeId global(std::string_view module, std::string_view name) {
    const std::optional<Known> known = known_global(module, name);
    if (!known) {
      if (module.substr(0, 5) == "torch" || module.substr(0, 9) == "__torch__") {
        refuse(fmt::format(
            "refers to {}.{}: a kind of object (quantized, sparse or subclassed tensor, TorchScript type, ...) that "
            "this reader does not support",
            module, name));
      }
      refuse(fmt::format("refers to {}.{}, which a weights file has no reason to contain", module, name));
    }
    Node node;
    node.kind = Kind::global;
    node.text = fmt::format("{}.{}", module, name);
    node.integer = static_cast<int64_t>(*known);
    return add(std::move(node));
  }

  Known known_of(NodeId callable, const char* how) {
    const Node& node = at(callable);
    if (node.kind != Kind::global)
      refuse(fmt::format("{} {}, which is not a constructor", how, document_.describe(callable)));
    return static_cast<Known>(node.integer);
  }

  NodeId new_dict(DictClass dict_class) {
    Node node;
    node.kind = Kind::dict;
    node.dict_class = dict_class;
    return add(std::move(node));
  }

  NodeId new_set(const std::vector<NodeId>& items) {
    count_items(items.size());
    Node node;
    node.kind = Kind::set;
    node.items = items;
    return add(std::move(node));
  }

  std::vector<int64_t> int_tuple(NodeId id, const char* what) {
    const Node& node = at(id);
    if (node.kind != Kind::tuple && node.kind != Kind::list) damaged(fmt::format("{} must be a tuple of ints", what));
    std::vector<int64_t> values;
    values.reserve(node.items.size());
    for (NodeId item : node.items) values.push_back(expect_integer(item, what));
    return values;
  }

  NodeId rebuild_tensor(const std::vector<NodeId>& args, bool v2) {
    if (v2 ? (args.size() != 6 && args.size() != 7) : args.size() != 4) {
      damaged(fmt::format("{} takes {} arguments, got {}", v2 ? "_rebuild_tensor_v2" : "_rebuild_tensor",
                          v2 ? "6 or 7" : "4", args.size()));
    }
    expect(args[0], Kind::storage, "a tensor's storage");
    TensorRef tensor;
    tensor.storage = args[0];
    tensor.storage_offset = expect_integer(args[1], "a tensor's storage offset");
    tensor.shape = int_tuple(args[2], "a tensor's size");
    tensor.stride = int_tuple(args[3], "a tensor's stride");
    if (tensor.shape.size() != tensor.stride.size()) {
      damaged(fmt::format("a tensor has {} sizes but {} strides", tensor.shape.size(), tensor.stride.size()));
    }
    if (v2) {
      const Kind requires_grad = at(args[4]).kind;
      if (requires_grad != Kind::boolean && requires_grad != Kind::integer) damaged("requires_grad must be a bool");
      // backward_hooks: an (empty) OrderedDict in every file torch.save writes; hooks are never restored.
      if (at(args[5]).kind != Kind::dict && at(args[5]).kind != Kind::none) damaged("backward_hooks must be a dict");
    }
    Node node;
    node.kind = Kind::tensor;
    node.integer = static_cast<int64_t>(document_.tensors_.size());
    document_.tensors_.push_back(std::move(tensor));
    return add(std::move(node));
  }

  NodeId call(NodeId callable, NodeId args_id) {
    const Known known = known_of(callable, "calls");
    const Node& args_node = at(args_id);
    if (args_node.kind != Kind::tuple) damaged(fmt::format("the arguments of {} are not a tuple", at(callable).text));
    const std::vector<NodeId> args = args_node.items;
    const std::string name = at(callable).text;  // a copy: adding nodes below may move the node storage
    auto arity = [&](size_t low, size_t high) {
      if (args.size() < low || args.size() > high)
        damaged(fmt::format("{} is called with {} arguments", name, args.size()));
    };
    switch (known) {
      case Known::ordered_dict: {
        arity(0, 1);
        const NodeId dict = new_dict(DictClass::ordered_dict);
        if (args.size() == 1) {
          const std::vector<NodeId> pairs = at(args[0]).items;
          if (at(args[0]).kind != Kind::list && at(args[0]).kind != Kind::tuple)
            damaged("OrderedDict(...) needs pairs");
          count_items(2 * pairs.size());
          for (NodeId pair : pairs) {
            const Node& p = at(pair);
            if ((p.kind != Kind::tuple && p.kind != Kind::list) || p.items.size() != 2)
              damaged("OrderedDict(...) needs (key, value) pairs");
            const NodeId key = p.items[0], value = p.items[1];
            at(dict).items.push_back(key);
            at(dict).items.push_back(value);
          }
        }
        return dict;
      }
      case Known::default_dict: {
        arity(0, 1);
        if (args.size() == 1) {
          const Node& factory = at(args[0]);
          const bool harmless =
              factory.kind == Kind::none ||
              (factory.kind == Kind::global && static_cast<Known>(factory.integer) == Known::builtin_type);
          if (!harmless) refuse(fmt::format("builds a defaultdict whose factory is {}", document_.describe(args[0])));
        }
        return new_dict(DictClass::default_dict);
      }
      case Known::attribute_dict:
      case Known::namespace_:
        arity(0, 0);
        return new_dict(known == Known::namespace_ ? DictClass::namespace_ : DictClass::attribute_dict);
      case Known::rebuild_tensor_v2: return rebuild_tensor(args, true);
      case Known::rebuild_tensor: return rebuild_tensor(args, false);
      case Known::rebuild_parameter:
      case Known::rebuild_parameter_with_state:
        arity(known == Known::rebuild_parameter ? 3 : 4, known == Known::rebuild_parameter ? 3 : 4);
        expect(args[0], Kind::tensor, "a parameter's data");
        return args[0];  // a Parameter is its tensor here; requires_grad, hooks and state do not matter for weights
      case Known::torch_size: {
        arity(1, 1);
        const std::vector<int64_t> dims = int_tuple(args[0], "torch.Size(...)");
        (void)dims;
        count_items(dims.size());
        Node node;
        node.kind = Kind::tuple;
        node.items = at(args[0]).items;
        return add(std::move(node));
      }
      case Known::torch_device: {
        arity(1, 2);
        std::string device = expect(args[0], Kind::string, "torch.device's type").text;
        if (args.size() == 2 && at(args[1]).kind != Kind::none)
          device += fmt::format(":{}", expect_integer(args[1], "torch.device's index"));
        return add_text(Kind::string, std::move(device));
      }
      case Known::codecs_encode:
      case Known::bytearray: {
        if (known == Known::bytearray && args.size() == 0) return add_text(Kind::bytes, {});
        if (known == Known::bytearray && args.size() == 1)
          return add_text(Kind::bytes, expect(args[0], Kind::bytes, "bytearray(...)").text);
        arity(2, 2);
        const std::string& text = expect(args[0], Kind::string, "the text to encode").text;
        const std::string& encoding = expect(args[1], Kind::string, "the encoding").text;
        if (encoding != "latin1" && encoding != "latin-1")
          refuse(fmt::format("encodes text as '{}'", encoding.substr(0, 40)));
        std::string bytes;
        if (!latin1_bytes(text, bytes)) damaged("text encoded as latin1 holds other characters");
        return add_text(Kind::bytes, std::move(bytes));
      }
      case Known::set:
      case Known::frozenset: {
        arity(0, 1);
        if (args.empty()) return new_set({});
        const Node& items = at(args[0]);
        if (items.kind != Kind::list && items.kind != Kind::tuple && items.kind != Kind::set)
          damaged("set(...) needs a list");
        return new_set(items.items);
      }
      case Known::path: {
        std::string path;
        for (NodeId part : args) {
          if (!path.empty()) path += '/';
          path += expect(part, Kind::string, "a path part").text;
        }
        return add_text(Kind::string, std::move(path));
      }
      case Known::identity:
        arity(1, 2);
        if (args.size() == 2) expect(args[1], Kind::string, "a type tag");
        return args[0];
      case Known::storage_type:
      case Known::builtin_type:
      case Known::torch_dtype: refuse(fmt::format("calls {}", name));
    }
    refuse(fmt::format("calls {}", name));
  }

  NodeId construct(NodeId cls, NodeId args_id, const char* how) {
    const Known known = known_of(cls, how);
    if (at(args_id).kind != Kind::tuple) damaged(fmt::format("the arguments of {} are not a tuple", at(cls).text));
    switch (known) {
      case Known::ordered_dict:
      case Known::default_dict:
      case Known::attribute_dict:
      case Known::namespace_:
      case Known::set:
      case Known::frozenset: {
        const NodeId empty = add_kind(Kind::tuple);
        return call(cls, empty);  // cls.__new__(cls) is the empty container; the contents follow
      }
      default: refuse(fmt::format("{} {}", how, at(cls).text));
    }
  }

  // BUILD: an object's state. Only dict-like objects have one here (OrderedDict's _metadata in a state_dict,
  // Namespace's attributes); it is data, never a __setstate__ call.
  void build(NodeId object, NodeId state) {
    Node& target = at(object);
    if (target.kind != Kind::dict) refuse(fmt::format("sets the state of {}", document_.describe(object)));
    std::vector<NodeId> parts;
    const Node& s = at(state);
    if (s.kind == Kind::tuple && s.items.size() == 2) {
      parts = s.items;
    } else {
      parts = {state};
    }
    for (NodeId part : parts) {
      const Node& p = at(part);
      if (p.kind == Kind::none) continue;
      if (p.kind != Kind::dict) refuse(fmt::format("sets an object's state from {}", document_.describe(part)));
      // Namespace attributes are its contents; other dict-likes keep their entries (attributes are dropped).
      if (at(object).dict_class == DictClass::namespace_) {
        const std::vector<NodeId> entries = p.items;
        count_items(entries.size());
        at(object).items.insert(at(object).items.end(), entries.begin(), entries.end());
      }
    }
  }

  NodeId persistent_load(NodeId pid) {
    const Node& id = at(pid);
    if (id.kind != Kind::tuple || id.items.size() != 5) {
      refuse(
          fmt::format("holds a persistent id that is {}, not a torch.save storage ('storage', type, key, location, "
                      "numel)",
                      document_.describe(pid)));
    }
    const std::vector<NodeId> items = id.items;
    if (at(items[0]).kind != Kind::string || at(items[0]).text != "storage")
      damaged("a persistent id is not a storage");
    const Node& type = at(items[1]);
    if (type.kind != Kind::global || static_cast<Known>(type.integer) != Known::storage_type)
      damaged(fmt::format("a storage's type is {}", document_.describe(items[1])));
    StorageRef storage;
    storage.type_name = type.text.substr(type.text.find('.') + 1);
    const Node& key = at(items[2]);
    if (key.kind == Kind::string) {
      storage.key = key.text;
    } else if (key.kind == Kind::integer) {
      storage.key = std::to_string(key.integer);
    } else {
      damaged("a storage's key is not a string");
    }
    storage.location = expect(items[3], Kind::string, "a storage's location").text;
    storage.numel = expect_integer(items[4], "a storage's size");
    if (storage.numel < 0) damaged(fmt::format("a storage has {} elements", storage.numel));
    Node node;
    node.kind = Kind::storage;
    node.integer = static_cast<int64_t>(document_.storages_.size());
    document_.storages_.push_back(std::move(storage));
    return add(std::move(node));
  }

  void set_items(NodeId dict, const std::vector<NodeId>& pairs) {
    if (at(dict).kind != Kind::dict) refuse(fmt::format("sets items of {}", document_.describe(dict)));
    if (pairs.size() % 2 != 0) damaged("SETITEMS with an odd number of values");
    count_items(pairs.size());
    std::vector<NodeId>& items = at(dict).items;
    items.insert(items.end(), pairs.begin(), pairs.end());
  }

  void append_items(NodeId list, const std::vector<NodeId>& values) {
    if (at(list).kind != Kind::list) refuse(fmt::format("appends to {}", document_.describe(list)));
    count_items(values.size());
    std::vector<NodeId>& items = at(list).items;
    items.insert(items.end(), values.begin(), values.end());
  }

  NodeId tuple_of(std::vector<NodeId> items) {
    count_items(items.size());
    Node node;
    node.kind = Kind::tuple;
    node.items = std::move(items);
    return add(std::move(node));
  }

  NodeId long_value(std::string_view bytes) {
    if (bytes.size() > 8) return add_kind(Kind::big_integer);
    uint64_t value = 0;
    for (size_t i = 0; i < bytes.size(); ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
    if (!bytes.empty() && bytes.size() < 8 && (static_cast<uint8_t>(bytes.back()) & 0x80) != 0)
      value |= ~uint64_t{0} << (8 * bytes.size());  // sign extension
    return add_integer(static_cast<int64_t>(value));
  }

  void read() {
    while (true) {
      opcode_at_ = position_;
      const uint8_t op = take_u8();
      switch (op) {
        case kProto: {
          const uint8_t version = take_u8();
          if (version > 5)
            throw Failure{unsupported(fmt::format("'{}': pickle protocol {} is newer than 5", source_, version))};
          break;
        }
        case kFrame: (void)take_le<uint64_t>(); break;
        case kStop: {
          document_.root_ = pop();
          return;
        }
        case kMark: marks_.push_back(stack_.size()); break;
        case kPop:
          if (!stack_.empty() && (marks_.empty() || stack_.size() > marks_.back())) {
            stack_.pop_back();
          } else {
            (void)pop_mark();  // Python pops a mark when the top of the stack is one
          }
          break;
        case kPopMark: (void)pop_mark(); break;
        case kDup: push(top()); break;
        case kNone: push(add_kind(Kind::none)); break;
        case kNewTrue:
        case kNewFalse: {
          Node node;
          node.kind = Kind::boolean;
          node.integer = op == kNewTrue ? 1 : 0;
          push(add(std::move(node)));
          break;
        }
        case kBinInt: push(add_integer(take_le<int32_t>())); break;
        case kBinInt1: push(add_integer(take_u8())); break;
        case kBinInt2: push(add_integer(take_le<uint16_t>())); break;
        case kLong1: push(long_value(take(take_u8()))); break;
        case kLong4: {
          const int32_t n = take_le<int32_t>();
          if (n < 0) damaged("LONG4 with a negative length");
          push(long_value(take(static_cast<uint64_t>(n))));
          break;
        }
        case kBinFloat: {
          uint64_t bits = 0;
          for (char c : take(8)) bits = (bits << 8) | static_cast<uint8_t>(c);  // big-endian
          Node node;
          node.kind = Kind::floating;
          node.floating = std::bit_cast<double>(bits);
          push(add(std::move(node)));
          break;
        }
        case kShortBinUnicode:
        case kShortBinString: push(add_text(Kind::string, std::string(take(take_u8())))); break;
        case kBinUnicode:
        case kBinString: push(add_text(Kind::string, std::string(take(take_le<uint32_t>())))); break;
        case kBinUnicode8: push(add_text(Kind::string, std::string(take(take_le<uint64_t>())))); break;
        case kShortBinBytes: push(add_text(Kind::bytes, std::string(take(take_u8())))); break;
        case kBinBytes: push(add_text(Kind::bytes, std::string(take(take_le<uint32_t>())))); break;
        case kBinBytes8:
        case kByteArray8: push(add_text(Kind::bytes, std::string(take(take_le<uint64_t>())))); break;
        case kEmptyTuple: push(tuple_of({})); break;
        case kTuple1: {
          const NodeId a = pop();
          push(tuple_of({a}));
          break;
        }
        case kTuple2: {
          const NodeId b = pop(), a = pop();
          push(tuple_of({a, b}));
          break;
        }
        case kTuple3: {
          const NodeId c = pop(), b = pop(), a = pop();
          push(tuple_of({a, b, c}));
          break;
        }
        case kTuple: push(tuple_of(pop_mark())); break;
        case kEmptyList: push(add_kind(Kind::list)); break;
        case kList: {
          Node node;
          node.kind = Kind::list;
          node.items = pop_mark();
          count_items(node.items.size());
          push(add(std::move(node)));
          break;
        }
        case kAppend: {
          const NodeId value = pop();
          append_items(top(), {value});
          break;
        }
        case kAppends: {
          const std::vector<NodeId> values = pop_mark();
          append_items(top(), values);
          break;
        }
        case kEmptyDict: push(new_dict(DictClass::dict)); break;
        case kDict: {
          const std::vector<NodeId> pairs = pop_mark();
          const NodeId dict = new_dict(DictClass::dict);
          set_items(dict, pairs);
          push(dict);
          break;
        }
        case kSetItem: {
          const NodeId value = pop(), key = pop();
          set_items(top(), {key, value});
          break;
        }
        case kSetItems: {
          const std::vector<NodeId> pairs = pop_mark();
          set_items(top(), pairs);
          break;
        }
        case kEmptySet: push(new_set({})); break;
        case kAddItems: {
          const std::vector<NodeId> values = pop_mark();
          if (at(top()).kind != Kind::set) refuse(fmt::format("adds items to {}", document_.describe(top())));
          count_items(values.size());
          Node& set = at(top());
          set.items.insert(set.items.end(), values.begin(), values.end());
          break;
        }
        case kFrozenSet: push(new_set(pop_mark())); break;
        case kBinPut: memo_put(take_u8(), top()); break;
        case kLongBinPut: memo_put(take_le<uint32_t>(), top()); break;
        case kMemoize: memo_put(memo_.size(), top()); break;
        case kBinGet: push(memo_get(take_u8())); break;
        case kLongBinGet: push(memo_get(take_le<uint32_t>())); break;
        case kGlobal: {
          const std::string_view module = take_line();
          const std::string_view name = take_line();
          push(global(module, name));
          break;
        }
        case kStackGlobal: {
          const NodeId name = pop(), module = pop();
          const std::string module_text = expect(module, Kind::string, "a global's module").text;
          const std::string name_text = expect(name, Kind::string, "a global's name").text;
          push(global(module_text, name_text));
          break;
        }
        case kReduce: {
          const NodeId args = pop(), callable = pop();
          push(call(callable, args));
          break;
        }
        case kNewObj: {
          const NodeId args = pop(), cls = pop();
          push(construct(cls, args, "creates"));
          break;
        }
        case kNewObjEx: {
          const NodeId kwargs = pop(), args = pop(), cls = pop();
          if (at(kwargs).kind != Kind::dict || !at(kwargs).items.empty())
            refuse("creates an object with keyword arguments");
          push(construct(cls, args, "creates"));
          break;
        }
        case kBuild: {
          const NodeId state = pop();
          build(top(), state);
          break;
        }
        case kBinPersId: push(persistent_load(pop())); break;
        case kInst:
        case kObj: refuse("creates an object through INST/OBJ (the text protocol's class calls)");
        case kExt1:
        case kExt2:
        case kExt4: refuse("uses the copyreg extension registry");
        case kPersId:
        case kInt:
        case kLong:
        case kFloat:
        case kString:
        case kUnicode:
        case kGet:
        case kPut:
        case kNextBuffer:
        case kReadonlyBuffer:
          throw Failure{unsupported(fmt::format(
              "'{}': the checkpoint's pickle uses opcode 0x{:02x} at byte {} (pickle protocol 0/1 or out-of-band "
              "buffers), which torch.save does not write; re-save it with torch.save",
              source_, op, opcode_at_))};
        default: damaged(fmt::format("unknown opcode 0x{:02x}", op));
      }
    }
  }

  std::string_view in_;
  const std::string& source_;
  size_t position_ = 0;
  size_t opcode_at_ = 0;
  Document document_;
  std::vector<NodeId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, NodeId> memo_;
  size_t items_ = 0;
};

Expected<Document> unpickle(std::string_view bytes, const std::string& source) {
  return Unpickler(bytes, source).run();
}

}  // namespace trackscope::core::io::pickle
