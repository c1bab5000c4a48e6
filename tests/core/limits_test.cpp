// Resource limits (core/limits.h), the streaming atomic writer and the output check (core/io/atomic_file.h), the
// query-file limit, and Annotation::replace_all (one notification for a whole project).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <vector>
#include <utility>
#include <string>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/io/atomic_file.h"
#include "core/io/queries_csv.h"
#include "core/limits.h"
#include "core/tracking/annotation.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  fs::path folder = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "limits" / name;
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- threads ------------------------------------------------------------------------------------------------

TEST(Limits, AvailableCpuThreadsIsWithinTheMachine) {
  const int cpus = available_cpu_threads();
  EXPECT_GE(cpus, 1);
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware > 0) {
    EXPECT_LE(cpus, static_cast<int>(hardware));
  }
}

// --threads 0: OMP_NUM_THREADS when it is a positive count (its first entry, capped to the machine), else every CPU.
TEST(Limits, AutomaticCpuThreadsHonoursOmpNumThreads) {
  const char* saved = std::getenv("OMP_NUM_THREADS");
  const std::string previous = saved != nullptr ? saved : "";
  const int cpus = available_cpu_threads();
  ASSERT_EQ(unsetenv("OMP_NUM_THREADS"), 0);
  EXPECT_EQ(automatic_cpu_threads(), cpus);
  const std::vector<std::pair<std::string, int>> cases = {{"1", 1},     {"100000", cpus}, {"1,4", 1}, {"0", cpus},
                                                          {"-3", cpus}, {"two", cpus},    {"", cpus}, {"2x", cpus}};
  for (const auto& [value, expected] : cases) {
    ASSERT_EQ(setenv("OMP_NUM_THREADS", value.c_str(), 1), 0);
    EXPECT_EQ(automatic_cpu_threads(), expected) << "OMP_NUM_THREADS='" << value << "'";
  }
  if (saved != nullptr) {
    setenv("OMP_NUM_THREADS", previous.c_str(), 1);
  } else {
    unsetenv("OMP_NUM_THREADS");
  }
}

TEST(Limits, ThreadRequestsAreCheckedAndCapped) {
  const Expected<ThreadCount> automatic = cap_thread_count(0, "--threads");
  ASSERT_TRUE(automatic);
  EXPECT_EQ(automatic->threads, 0);
  EXPECT_TRUE(automatic->notice.empty());

  const Expected<ThreadCount> negative = cap_thread_count(-1, "--threads");
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(negative.status().message().find("--threads -1 is negative"), std::string::npos);

  const Expected<ThreadCount> huge = cap_thread_count(1000, "--threads", 2);
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->threads, 2);
  EXPECT_EQ(huge->notice, "--threads 1000 is more than the 2 CPU threads this process can use; using 2");

  const Expected<ThreadCount> machine = cap_thread_count(int64_t{1} << 40, "decoder threads");
  ASSERT_TRUE(machine);
  EXPECT_EQ(machine->threads, available_cpu_threads());
  EXPECT_FALSE(machine->notice.empty());

  const Expected<ThreadCount> fits = cap_thread_count(1, "--threads", 2);
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->threads, 1);
  EXPECT_TRUE(fits->notice.empty());
}

// ---- points and queries -------------------------------------------------------------------------------------

TEST(Limits, TrackedPointCountAboveTheLimitIsRefused) {
  EXPECT_TRUE(check_tracked_point_count(kMaxTrackedPoints).ok());
  const Status refused = check_tracked_point_count(100'000);
  EXPECT_EQ(refused.code(), StatusCode::invalid_argument);
  EXPECT_NE(refused.message().find("100000 points are more than the 10000"), std::string::npos) << refused.message();
}

TEST(Limits, QueryFileReaderStopsAtTheFirstRowPastTheLimit) {
  const fs::path folder = fresh_folder("queries");
  const fs::path at_limit = folder / "at_limit.csv";
  {
    std::ofstream out(at_limit);
    out << "frame,x,y\n";
    for (int64_t i = 0; i < kMaxTrackedPoints; ++i) out << i % 50 << "," << 1 + i % 300 << ".5,10.5\n";
  }
  const Expected<std::vector<Query>> fits = read_queries_csv(at_limit);
  ASSERT_TRUE(fits) << fits.status().message();
  EXPECT_EQ(fits->size(), static_cast<size_t>(kMaxTrackedPoints));

  // One row more, then rows that do not parse: the reader must stop at the row past the limit without reading
  // on (it would otherwise report the bad row).
  const fs::path over = folder / "over.csv";
  fs::copy_file(at_limit, over);
  {
    std::ofstream out(over, std::ios::app);
    out << "0,1.5,1.5\n";
    for (int i = 0; i < 1000; ++i) out << "not,a,row\n";
  }
  const Expected<std::vector<Query>> refused = read_queries_csv(over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(refused.status().message().find(":10002: more than 10000 queries"), std::string::npos)
      << refused.status().message();
}

TEST(Limits, TrackerOptionsRefuseAnAbsurdMemoryBudget) {
  TrackerOptions options;
  options.memory_budget_mb = int64_t{1} << 40;
  const Status refused = options.check();
  EXPECT_EQ(refused.code(), StatusCode::invalid_argument);
  EXPECT_NE(refused.message().find("larger than any machine"), std::string::npos) << refused.message();
  options.memory_budget_mb = 2048;
  EXPECT_TRUE(options.check().ok());
}

// ---- AtomicFile and check_writable --------------------------------------------------------------------------

TEST(AtomicFileStream, CommitReplacesAndAbandonKeepsThePreviousFile) {
  const fs::path folder = fresh_folder("stream");
  const fs::path target = folder / "video.bin";
  ASSERT_TRUE(io::write_file_atomically(target, "old").ok());
  {
    Expected<io::AtomicFile> file = io::AtomicFile::create(target);
    ASSERT_TRUE(file) << file.status().message();
    ASSERT_TRUE(file->write("new ").ok());
    ASSERT_TRUE(file->write("contents").ok());
    EXPECT_EQ(file->bytes_written(), 12u);
    EXPECT_TRUE(fs::exists(file->temporary_path()));
    EXPECT_EQ(contents(target), "old");  // nothing replaced before commit
    // Destroyed without commit: abandoned.
  }
  EXPECT_EQ(contents(target), "old");
  EXPECT_TRUE(io::leftover_temporary_files(target).empty());

  Expected<io::AtomicFile> file = io::AtomicFile::create(target);
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->write("new contents").ok());
  // Moving keeps one owner of the temporary file.
  io::AtomicFile moved = std::move(*file);
  ASSERT_TRUE(moved.commit().ok());
  EXPECT_EQ(contents(target), "new contents");
  EXPECT_TRUE(io::leftover_temporary_files(target).empty());
  EXPECT_EQ(moved.write("more").code(), StatusCode::io_error);  // spent
  EXPECT_EQ(moved.commit().code(), StatusCode::io_error);
}

TEST(AtomicFileStream, CreateInAMissingFolderNamesIt) {
  const Expected<io::AtomicFile> file = io::AtomicFile::create("/nonexistent/folder/out.bin");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.status().code(), StatusCode::io_error);
  EXPECT_NE(file.status().message().find("/nonexistent/folder"), std::string::npos);
}

TEST(CheckWritable, AnswersBeforeTheWorkAndLeavesNothing) {
  const fs::path folder = fresh_folder("writable");
  EXPECT_TRUE(io::check_writable(folder / "out.csv").ok());
  EXPECT_TRUE(fs::is_empty(folder));
  EXPECT_EQ(io::check_writable(folder).code(), StatusCode::invalid_argument);  // a folder, not a file
  EXPECT_EQ(io::check_writable("").code(), StatusCode::invalid_argument);
  const Status missing = io::check_writable(folder / "no_such_folder" / "out.csv");
  EXPECT_EQ(missing.code(), StatusCode::not_found);
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos);
  const Status space = io::check_writable(folder / "out.csv", uint64_t{1} << 62);
  EXPECT_EQ(space.code(), StatusCode::io_error);
  EXPECT_NE(space.message().find("MiB are free"), std::string::npos) << space.message();
  if (::geteuid() != 0) {  // root ignores permissions (app/writer_faults covers a read-only mount)
    ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
    const Status refused = io::check_writable(folder / "out.csv");
    ::chmod(folder.c_str(), 0755);
    EXPECT_EQ(refused.code(), StatusCode::io_error);
  }
}

TEST(ReadFile, ReportsProgressAndRefusesLargeFiles) {
  const fs::path folder = fresh_folder("read");
  const std::string text(size_t{3} << 20, 'x');
  ASSERT_TRUE(io::write_file_atomically(folder / "big.txt", text).ok());
  std::vector<uint64_t> seen;
  const Expected<std::string> read =
      io::read_file(folder / "big.txt", size_t{1} << 30, [&](uint64_t done, uint64_t) { seen.push_back(done); });
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, text);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.back(), text.size());
  EXPECT_EQ(io::read_file(folder / "big.txt", 1000).status().code(), StatusCode::invalid_argument);
}

// ---- Annotation::replace_all --------------------------------------------------------------------------------

struct CountingObserver : AnnotationObserver {
  int changes = 0;
  std::vector<AnnotationChangeKind> kinds;
  void on_annotation_changed(const Annotation&, const AnnotationChange& change) override {
    ++changes;
    kinds.push_back(change.kind);
  }
};

TEST(AnnotationReplaceAll, OneNotificationForAWholeProject) {
  Annotation annotation;
  CountingObserver observer;
  annotation.add_observer(&observer);
  (void)annotation.add({0, 1.0, 1.0});
  std::vector<QueryPoint> points;
  std::map<PointId, PointTrack> tracks;
  for (int i = 0; i < 20000; ++i) {
    const PointId id = 19999 - i;  // any order
    points.push_back({id, {id % 40, 10.5, 20.5}, id % 7});
    if (id % 2 == 0) {
      PointTrack track;
      track.track.query = points.back().query;
      track.track.points.resize(40);
      track.keyframes = {3, 9};
      tracks.emplace(id, std::move(track));
    }
  }
  observer.changes = 0;
  observer.kinds.clear();
  annotation.replace_all(points, tracks, 30000);
  EXPECT_EQ(observer.changes, 1);
  EXPECT_EQ(observer.kinds.front(), AnnotationChangeKind::cleared);
  EXPECT_EQ(annotation.size(), 20000u);
  EXPECT_EQ(annotation.points().front().id, 0);
  EXPECT_EQ(annotation.points().back().id, 19999);
  ASSERT_NE(annotation.track(4), nullptr);
  EXPECT_EQ(annotation.track(5), nullptr);
  EXPECT_EQ(annotation.add({0, 2.0, 2.0}), 30000);  // ids above next_id
  annotation.remove_observer(&observer);
}

TEST(AnnotationReplaceAll, InvalidContentChangesNothing) {
  Annotation annotation;
  (void)annotation.add({0, 1.0, 1.0});
  const std::vector<QueryPoint> twice = {{3, {0, 1.0, 1.0}, 0}, {3, {1, 1.0, 1.0}, 1}};
  EXPECT_THROW(annotation.replace_all(twice, {}), InvariantError);
  std::map<PointId, PointTrack> orphan;
  orphan[9] = PointTrack{};
  EXPECT_THROW(annotation.replace_all({{3, {0, 1.0, 1.0}, 0}}, orphan), InvariantError);
  PointTrack uncovered;
  uncovered.track.points.resize(5);
  uncovered.keyframes = {7};
  EXPECT_THROW(annotation.replace_all({{3, {0, 1.0, 1.0}, 0}}, {{3, uncovered}}), InvariantError);
  ASSERT_EQ(annotation.size(), 1u);
  EXPECT_EQ(annotation.points().front().id, 0);
}

}  // namespace
}  // namespace trackscope::core
