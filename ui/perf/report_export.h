#pragma once
// Exports a performance report into a folder: the profiles as JSON (the bench schema, re-openable), the
// per-stage statistics, roofline and comparison as CSV, the comparison's diagnosis as text, and the charts as
// PNG. Each file is written atomically (core/io/atomic_file.h). GUI thread only (the charts are rendered from
// their widgets).

#include <QString>
#include <QStringList>

#include <utility>
#include <vector>

#include "core/perf/diagnosis.h"
#include "core/perf/roofline.h"

class QWidget;

namespace trackscope::ui {

struct ReportContent {
  const core::Profile* current = nullptr;            // the current run's profile (profile.json, stages.csv)
  std::optional<core::Roofline> roofline;            // roofline.csv
  const core::Comparison* comparison = nullptr;      // comparison.csv, comparison.txt
  const core::Profile* compared_a = nullptr;         // comparison_a.json
  const core::Profile* compared_b = nullptr;         // comparison_b.json
  std::vector<std::pair<QString, QWidget*>> charts;  // file stem -> widget rendered to <stem>.png
};

/// Writes the files and returns their paths; io_error when the folder cannot be created or a file written.
core::Expected<QStringList> export_report(const QString& directory, const ReportContent& content);

}  // namespace trackscope::ui
