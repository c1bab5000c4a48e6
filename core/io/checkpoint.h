#pragma once
// PyTorch checkpoints written by torch.save (the zip format of PyTorch >= 1.6), read without torch and without
// running anything from the file: the zip archive (libzip), its data.pkl through the restricted unpickler
// (core/io/pickle.h) and the tensor storages (data/<key> records) of the state dict only.
//
//   Expected<Checkpoint> checkpoint = io::read_checkpoint("locotrack_small.ckpt");
//   if (!checkpoint) return checkpoint.status();            // refused, damaged, or not a state dict
//   for (const CheckpointTensor& t : checkpoint->tensors) use(t.name, t.dtype, t.shape, t.data);
//
// Layouts: a state dict ({name: tensor}, torch.save(model.state_dict())), or a dict holding one under
// "state_dict" (PyTorch Lightning: beside it epoch, global_step, callbacks, optimizer_states, lr_schedulers,
// hyper_parameters, loops, ...). One-item dicts (SETITEM), OrderedDicts with _metadata, Parameters, views
// (offsets, strides) and shared storages are all read. What else the file holds is read as data and ignored
// (optimizer states are never materialised), as long as the unpickler accepts it: other Python objects are
// refused (pickle.h lists what is accepted and why).
// Checks: the archive has one <prefix>/data.pkl (a TorchScript archive, with code/, is named as such), a
// little-endian byteorder, storages whose record size matches numel x element size, tensors that lie inside
// their storage, at most kMaxCheckpointTensorBytes of state-dict tensors in total, dtypes of the safetensors set
// (complex and quantized tensors are unsupported).
// Threads: pure functions.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/safetensors.h"
#include "core/status.h"

namespace trackscope::core::io {

/// The state-dict tensors a file may hold in total (LocoTrack-B is 46 MB; 2 GiB is a model 40x larger).
inline constexpr uint64_t kMaxCheckpointTensorBytes = uint64_t{2} << 30;
/// data.pkl is kilobytes for a state dict, a few megabytes with optimizer state and hyper-parameters.
inline constexpr uint64_t kMaxCheckpointPickleBytes = uint64_t{64} << 20;

struct CheckpointTensor {
  std::string name;  // the state dict's key, as stored (a "model." prefix is kept)
  TensorDtype dtype = TensorDtype::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;  // contiguous, C order, little-endian: element_count x dtype size bytes
};

struct Checkpoint {
  std::vector<CheckpointTensor> tensors;   // state-dict order (a repeated key keeps its first position, last value)
  std::string layout;                      // "state dict" / "Lightning checkpoint (state_dict)"
  std::vector<std::string> other_entries;  // top-level keys beside "state_dict" (read as data, not used)
};

/// Reads the file (members are read as they are needed).
Expected<Checkpoint> read_checkpoint(const std::filesystem::path& path);
/// The same from the bytes of a file; `source` names them in messages.
Expected<Checkpoint> parse_checkpoint(std::string_view bytes, const std::string& source);

/// What the first bytes of a weights file say it is.
enum class WeightsFileKind {
  torch_zip,     // "PK\x03\x04": torch.save's zip (or another zip)
  torch_legacy,  // 0x80 0x02 ...: a pickle, i.e. torch.save before PyTorch 1.6 (_use_new_zipfile_serialization=False)
  safetensors,   // an 8-byte header length that fits the file, then '{'
  unknown,
};
WeightsFileKind detect_weights_file(std::span<const std::byte> head, uint64_t file_size);
/// "'x.ckpt' is not a weights file: ... (it starts with 3f a2 00 ..)", naming what was expected from its extension.
std::string describe_unknown_weights_file(const std::filesystem::path& path, std::span<const std::byte> head);

}  // namespace trackscope::core::io
