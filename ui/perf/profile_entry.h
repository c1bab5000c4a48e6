#pragma once
// A profile the performance dock can show or compare: one case of a Profile (a live run, a bench JSON file
// opened from disk, or a what-if prediction). Entries share their Profile (immutable once added).

#include <QString>

#include <memory>

#include "core/perf/profile.h"

namespace trackscope::ui {

struct ProfileEntry {
  QString label;                                 // "live 3: NVIDIA H200 small-n1024-t47-fp32-c256"
  QString source;                                // "live", a file path, or "what-if"
  std::shared_ptr<const core::Profile> profile;  // never null in a stored entry
  int case_index = 0;

  const core::ProfileCase& run() const { return profile->cases.at(static_cast<size_t>(case_index)); }
  core::RunRef ref() const { return {profile.get(), &run(), label.toStdString()}; }
};

}  // namespace trackscope::ui
