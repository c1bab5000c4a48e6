#pragma once
// A restricted unpickler for the data.pkl of torch.save checkpoints: it reads Python pickles (protocols 2 to 5, as
// torch.save writes them with protocol 2) into a tree of plain values, and NEVER runs or imports anything. A real
// pickle calls whatever its GLOBAL/REDUCE opcodes name; this one knows a short list of names and gives each a
// fixed meaning as data:
//
//   built as values:  None, bools, ints, floats, str, bytes, tuples, lists, dicts, sets; collections.OrderedDict
//                     and collections.defaultdict (as dicts; a defaultdict's factory must be a builtin type);
//                     Lightning's AttributeDict and argparse.Namespace (as dicts); torch.Size (a tuple),
//                     torch.device (a string), torch dtypes and builtin types (named constants), _codecs.encode
//                     (bytes, as protocol 2 writes them), pathlib paths (strings), set/frozenset/bytearray,
//                     LibTorch's pickler tags (torch.jit._pickle.restore_type_tag, build_intlist, ...: the value)
//   tensors:          torch._utils._rebuild_tensor_v2 / _rebuild_tensor / _rebuild_parameter[_with_state] over
//                     storages named by persistent ids ('storage', torch.<Type>Storage, key, location, numel)
//
// Everything else is refused with a message naming it: any other global (os.system, numpy, custom classes,
// TorchScript's __torch__ types), REDUCE/NEWOBJ on anything but the constructors above, BUILD on anything but a
// dict-like object, the text-protocol opcodes INST/OBJ and the extension registry. The tree holds tensors as
// references (storage key, offset, shape, strides): the storages are read by core/io/checkpoint.h.
//
// Limits (checked before anything is allocated): strings and byte strings no longer than the input left,
// at most kMaxPickleNodes values, kMaxPickleItems container entries, kMaxPickleStack stack entries and memo slots;
// integers beyond 64 bits are kept
// as an opaque "big integer" (Lightning's hyper-parameters may hold one; a tensor may not).
//
//   Expected<pickle::Document> doc = pickle::unpickle(data_pkl_bytes, "model.ckpt");
//   if (!doc) return doc.status();                       // refused or damaged: the message says which and why
//   const pickle::Node& root = doc->node(doc->root());
//   if (auto state = doc->dict_get(doc->root(), "state_dict")) ...
//
// Threads: unpickle() is a pure function; a Document is immutable.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::io::pickle {

inline constexpr size_t kMaxPickleNodes = size_t{1} << 20;
inline constexpr size_t kMaxPickleStack = size_t{1} << 20;
/// Entries in all containers together (a BUILD or APPENDS repeated on one big container would otherwise grow it
/// quadratically in the size of the stream).
inline constexpr size_t kMaxPickleItems = size_t{1} << 22;

using NodeId = uint32_t;

enum class Kind {
  none,
  boolean,
  integer,
  big_integer,  // an int beyond 64 bits: kept, not valued
  floating,
  string,
  bytes,
  tuple,
  list,
  set,
  dict,     // also OrderedDict, defaultdict, AttributeDict, Namespace (see DictClass)
  global,   // a named constant: a torch dtype, a storage type, a builtin type (its name in `text`)
  storage,  // a persistent-id storage (see StorageRef)
  tensor,   // a rebuilt tensor (see TensorRef)
};
const char* to_string(Kind kind);

enum class DictClass { dict, ordered_dict, default_dict, attribute_dict, namespace_ };

struct StorageRef {
  std::string type_name;  // "FloatStorage", "BFloat16Storage", ... (the global torch.<type_name>)
  std::string key;        // the record data/<key> of the archive
  std::string location;   // "cpu", "cuda:0" (ignored: everything loads on the CPU)
  int64_t numel = 0;      // elements of the storage's type
};

struct TensorRef {
  NodeId storage = 0;  // a Kind::storage node
  int64_t storage_offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
};

struct Node {
  Kind kind = Kind::none;
  int64_t integer = 0;  // integer, boolean (0/1); index into Document's storages/tensors for those kinds
  double floating = 0.0;
  std::string text;           // string, bytes, global (its "module.name")
  std::vector<NodeId> items;  // tuple, list, set; dict: key, value, key, value, ... in insertion order
  DictClass dict_class = DictClass::dict;
};

class Document {
 public:
  NodeId root() const { return root_; }
  const Node& node(NodeId id) const { return nodes_.at(id); }
  size_t size() const { return nodes_.size(); }
  const StorageRef& storage(const Node& node) const { return storages_.at(static_cast<size_t>(node.integer)); }
  const TensorRef& tensor(const Node& node) const { return tensors_.at(static_cast<size_t>(node.integer)); }

  /// The value of string key `key` in dict `dict` (the last one when a key repeats, as Python keeps it).
  std::optional<NodeId> dict_get(NodeId dict, std::string_view key) const;
  /// "a dict of 3 entries", "a tensor", "the constant torch.float32": for messages.
  std::string describe(NodeId id) const;

 private:
  friend class Unpickler;
  std::vector<Node> nodes_;
  std::vector<StorageRef> storages_;
  std::vector<TensorRef> tensors_;
  NodeId root_ = 0;
};

/// Reads a pickle. `source` names the file in messages. unsupported for a refused object (the message names the
/// global and says that nothing was run) or an opcode this reader does not implement; corrupt_data for a
/// damaged or truncated stream; invalid_argument when a limit above is exceeded.
Expected<Document> unpickle(std::string_view bytes, const std::string& source);

}  // namespace trackscope::core::io::pickle
