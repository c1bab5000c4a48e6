#pragma once
// Private to core/io (.cpp files that use libzip): reading one member of a zip archive whose directory comes from
// an untrusted file. The sizes an archive declares are checked before the buffer for a member is allocated: at most
// `max_bytes`, compressed bytes that fit in the archive, and an uncompressed size its compressed bytes can produce
// (stored: equal; deflate expands at most 1032:1). A lying directory is corrupt_data, not a gigabyte allocation.
//
//   Expected<std::string> bytes = read_zip_member(archive, index, archive_bytes, 1 << 30, "tracks.npz");
//
// Threads: like the zip_t it reads.

#include <zip.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace trackscope::core::io {

/// Member `index` of `archive` (`archive_bytes`: the size of the whole archive). unsupported above `max_bytes`.
Expected<std::string> read_zip_member(zip_t* archive, zip_uint64_t index, uint64_t archive_bytes, uint64_t max_bytes,
                                      const std::string& source);

}  // namespace trackscope::core::io
