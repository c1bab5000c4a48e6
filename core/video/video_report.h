#pragma once
// A video's metadata and the damage found in it, as JSON (`trackscope-cli info`):
//
//   {"path": ..., "width": 854, ..., "frame_count": 50, ..., "integrity": {"scanned": true, "clean": true, ...}}
//
// Threads: pure function.

#include <string>

#include "core/video/video_source.h"

namespace trackscope::core {

/// The metadata of `info` (path, container, codec, size, frame rate as num/den/fps, frame count, duration,
/// rotation, variable frame rate, how pixels become RGB) with `integrity` under "integrity" (checked frames,
/// clean, the damaged frames with their decoder errors, skipped and resized images, summary; scan_ms when
/// `scanned`). Indented by 2 spaces, no trailing newline.
std::string video_report_json(const VideoInfo& info, const IntegrityReport& integrity, bool scanned, double scan_ms);

}  // namespace trackscope::core
