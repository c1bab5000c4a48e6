// Projects in the workbench: save and reopen everything (points, tracks, keyframes, provenance, view); a moved
// video is asked for and its fingerprint checked; bad project files are reported and lose nothing; unsaved
// changes are asked about; and the crash test: a helper process killed in the middle of a save leaves the
// previous project intact, and the next start recovers its edits from the autosave.
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "core/io/atomic_file.h"
#include "core/io/project.h"
#include "project_support.h"
#include "ui/annotation_controller.h"
#include "ui/tracking/tracking_controller.h"

using namespace trackscope;
using testing::ProjectBench;

namespace {

std::string read_bytes(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return file.readAll().toStdString();
}

}  // namespace

class ProjectTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void save_and_reopen_keeps_everything() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 300000, 1);
    const QString project = dir.filePath("bees.trackscope");
    core::PointTrack saved_track;
    {
      ProjectBench a({video}, dir.filePath("recovery"));
      QVERIFY(a.open(video));
      QVERIFY(!a.projects()->dirty());
      QVERIFY(a.add_and_track(40.5, 60.5));
      a.bench.window->editor()->add_point({3, 200.5, 100.5});  // a point without a track
      QVERIFY(a.bench.show_frame(20));
      a.bench.window->editor()->move_estimate(0, 20, 99.0, 88.0);
      a.bench.window->editor()->finish_move(0);
      ui::TrackOverlayOptions overlay = a.bench.tracking()->track_overlay();
      overlay.trail_before_frames = 33;
      overlay.colouring = ui::TrackColouring::motion_direction;
      a.bench.tracking()->set_track_overlay(overlay);
      QVERIFY(a.projects()->dirty());
      QVERIFY(a.window()->windowTitle().contains(QStringLiteral("*")));
      QVERIFY(a.projects()->save_as(dir.filePath("bees")));  // the suffix is added
      QCOMPARE(a.projects()->project_path(), project);
      QVERIFY(!a.projects()->dirty());
      QVERIFY(!a.window()->windowTitle().contains(QStringLiteral("*")));
      QVERIFY(a.window()->windowTitle().startsWith(QStringLiteral("bees.trackscope")));
      saved_track = *a.annotation().track(0);
    }
    ProjectBench b({video}, dir.filePath("recovery"));
    QVERIFY(b.open_project(project));
    QCOMPARE(b.annotation().size(), size_t{2});
    QCOMPARE(*b.annotation().track(0), saved_track);
    QCOMPARE(b.annotation().track(0)->keyframes, std::vector<int64_t>{20});
    QCOMPARE(b.annotation().track(0)->provenance.model, std::string("Fake LocoTrack (default)"));
    QVERIFY(b.annotation().track(1) == nullptr);
    QCOMPARE(b.annotation().find(1)->query, (core::Query{3, 200.5, 100.5}));
    QCOMPARE(b.bench.tracking()->track_overlay().trail_before_frames, 33);
    QCOMPARE(b.bench.tracking()->track_overlay().colouring, ui::TrackColouring::motion_direction);
    QTRY_COMPARE(b.bench.canvas()->frame_index(), int64_t{20});  // the frame it was saved on
    QVERIFY(!b.projects()->dirty());
    QVERIFY(!b.bench.window->editor()->can_undo());
    QCOMPARE(b.bench.window->editor()->add_point({0, 1.5, 1.5}), core::PointId{2});  // ids continue
    QVERIFY(b.answers->asked.isEmpty());
  }

  // The window and Save As decide "is this a project?" by core::io::is_project_path (case-insensitive), as
  // trackscope-cli does: a project named in capitals is neither given a second ending nor opened as a video.
  void a_project_named_in_capitals_is_a_project() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 300000, 1);
    const QString project = dir.filePath("BEES.TRACKSCOPE");
    {
      ProjectBench a({video}, dir.filePath("recovery"));
      QVERIFY(a.open(video));
      QVERIFY(a.add_and_track(40.5, 60.5));
      QVERIFY(a.projects()->save_as(project));
      QCOMPARE(a.projects()->project_path(), project);
      QVERIFY(QFileInfo::exists(project));
    }
    ProjectBench b({video}, dir.filePath("recovery"));
    QSignalSpy opened(b.projects(), &ui::ProjectController::project_opened);
    b.window()->open_video(project);  // as a dropped file or the command line's argument
    QVERIFY(opened.wait(5000));
    QCOMPARE(b.projects()->project_path(), project);
    QCOMPARE(b.annotation().size(), size_t{1});
  }

  void a_moved_video_is_asked_for_and_checked() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 3 << 20, 2);
    const QString project = dir.filePath("p.trackscope");
    {
      ProjectBench a({video}, dir.filePath("recovery"));
      QVERIFY(a.open(video));
      QVERIFY(a.add_and_track(40.5, 60.5));
      QVERIFY(a.projects()->save_as(project));
    }
    QDir().mkpath(dir.filePath("moved"));
    const QString moved = dir.filePath("moved/renamed.mp4");
    QVERIFY(QFile::rename(video, moved));
    const QString other = dir.filePath("moved/other.mp4");
    testing::write_fake_video_file(other, 3 << 20, 3);

    ProjectBench b({moved, other}, dir.filePath("recovery"));
    QVERIFY(b.open(other));
    b.bench.window->editor()->add_point({0, 10.5, 10.5});
    b.answers->unsaved = ui::UnsavedChoice::discard;
    // Cancelled: nothing changes.
    b.answers->located_video.clear();
    QVERIFY(!b.open_project(project));
    QCOMPARE(b.annotation().size(), size_t{1});
    QVERIFY(b.answers->asked.last().startsWith(QStringLiteral("locate: ") + video));
    // The wrong file: its fingerprint differs; refusing keeps everything.
    b.answers->located_video = other;
    QVERIFY(!b.open_project(project));
    QVERIFY(b.answers->asked.last().startsWith(QStringLiteral("confirm: ")));
    QVERIFY(b.answers->asked.last().contains(QStringLiteral("not the project's video")));
    QCOMPARE(b.annotation().size(), size_t{1});
    QCOMPARE(b.bench.window->session()->path(), other);
    // The right file: opens without a question about it.
    b.answers->located_video = moved;
    const int questions = static_cast<int>(b.answers->asked.size());
    QVERIFY(b.open_project(project));
    QCOMPARE(b.bench.window->session()->path(), moved);
    QCOMPARE(b.annotation().size(), size_t{1});
    QVERIFY(b.annotation().track(0) != nullptr);
    QCOMPARE(b.answers->asked.size(), questions + 1);  // just "locate"
  }

  void bad_project_files_are_reported_and_lose_nothing() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 10000, 4);
    ProjectBench a({video}, dir.filePath("recovery"));
    QVERIFY(a.open(video));
    QVERIFY(a.add_and_track(40.5, 60.5));
    QVERIFY(a.projects()->save_as(dir.filePath("good.trackscope")));
    const std::string good = read_bytes(dir.filePath("good.trackscope"));
    a.bench.window->editor()->add_point({0, 5.5, 5.5});
    const core::PointTrack track = *a.annotation().track(0);

    struct Case {
      QString name;
      std::string bytes;
      QString words;
    };
    std::string newer = good;
    newer.replace(newer.find("\"version\": 1"), 12, "\"version\": 2");
    std::string no_video = good;
    no_video.replace(no_video.find("\"video\""), 7, "\"vidoe\"");
    const std::vector<Case> cases = {{"truncated.trackscope", good.substr(0, good.size() * 2 / 3), "truncated"},
                                     {"garbage.trackscope", "\x89PNG\r\n", "not a readable project"},
                                     {"newer.trackscope", newer, "newer Trackscope"},
                                     {"fields.trackscope", no_video, "\"video\" is missing"}};
    for (const Case& c : cases) {
      const QString path = dir.filePath(c.name);
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(c.bytes.data(), static_cast<qint64>(c.bytes.size()));
      file.close();
      a.bench.errors.clear();
      QVERIFY(!a.open_project(path));
      QCOMPARE(a.bench.errors.size(), 1);
      QVERIFY2(a.bench.errors[0].contains(c.words), qPrintable(a.bench.errors[0]));
      QVERIFY(a.bench.errors[0].contains(QStringLiteral("Nothing was changed")));
      QCOMPARE(a.annotation().size(), size_t{2});
      QCOMPARE(*a.annotation().track(0), track);
      QVERIFY(a.projects()->dirty());
      QCOMPARE(a.projects()->project_path(), dir.filePath("good.trackscope"));
    }
    // A project whose video is gone, and the user cancels: nothing changes either.
    QVERIFY(QFile::remove(video));
    a.answers->located_video.clear();
    QVERIFY(!a.open_project(dir.filePath("good.trackscope")));
    QCOMPARE(a.annotation().size(), size_t{2});
  }

  void unsaved_changes_are_asked_about() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 10000, 5);
    ProjectBench a({video}, dir.filePath("recovery"));
    QVERIFY(a.open(video));
    QVERIFY(a.projects()->confirm_discard("closing"));  // nothing unsaved: no question
    QVERIFY(a.answers->asked.isEmpty());
    a.bench.window->editor()->add_point({0, 5.5, 5.5});
    a.answers->unsaved = ui::UnsavedChoice::cancel;
    QVERIFY(!a.window()->close());  // cancelled: the window stays
    QCOMPARE(a.answers->asked.size(), 1);
    a.answers->unsaved = ui::UnsavedChoice::save;
    a.answers->save_path = dir.filePath("asked.trackscope");
    QVERIFY(a.projects()->confirm_discard("opening another video"));
    QVERIFY(QFile::exists(dir.filePath("asked.trackscope")));
    QVERIFY(!a.projects()->dirty());
    // Undo after the save makes it dirty again; redo back to the saved state is clean.
    QVERIFY(a.bench.window->editor()->undo());
    QVERIFY(a.projects()->dirty());
    QVERIFY(a.bench.window->editor()->redo());
    QVERIFY(!a.projects()->dirty());
  }

  void a_kill_in_the_middle_of_a_save_loses_nothing() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 200000, 6);
    const QString project = dir.filePath("p.trackscope");
    const QString recovery = dir.filePath("recovery");
    {
      ProjectBench a({video}, dir.filePath("first-session"));
      QVERIFY(a.open(video));
      QVERIFY(a.add_and_track(40.5, 60.5));
      QVERIFY(a.projects()->save_as(project));
    }
    const std::string version_one = read_bytes(project);
    const core::io::Project before = *core::io::load_project(project.toStdString());

    QProcess helper;
    helper.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    helper.start(QStringLiteral(TRACKSCOPE_SAVE_CRASH_HELPER), {dir.path(), video, project});
    QVERIFY(helper.waitForStarted(5000));
    QVERIFY2(
        QTest::qWaitFor([&] { return QFile::exists(dir.filePath("saving")) || helper.state() == QProcess::NotRunning; },
                        30000),
        "the helper never reached the middle of its save");
    QVERIFY2(QFile::exists(dir.filePath("saving")),
             qPrintable(QStringLiteral("helper exit code %1").arg(helper.exitCode())));
    helper.kill();  // SIGKILL
    QVERIFY(helper.waitForFinished(5000));
    QCOMPARE(helper.exitStatus(), QProcess::CrashExit);

    // The previous project is intact, byte for byte; the half-written temporary file is what the kill left.
    QCOMPARE(read_bytes(project), version_one);
    QCOMPARE(*core::io::load_project(project.toStdString()), before);
    const std::vector<std::filesystem::path> leftovers = core::io::leftover_temporary_files(project.toStdString());
    QCOMPARE(leftovers.size(), size_t{1});
    QVERIFY(QDir(recovery).entryList({"*.trackscope-recovery"}).size() == 1);

    // The next start offers the autosave of the killed session and restores its edits.
    ProjectBench b({video}, recovery);
    b.answers->recovery = ui::RecoveryChoice::recover;
    QSignalSpy opened(b.projects(), &ui::ProjectController::project_opened);
    QVERIFY(opened.wait(5000));
    QCOMPARE(b.answers->asked.size(), 1);
    QVERIFY(b.answers->asked[0].startsWith(QStringLiteral("recovery: ")));
    QVERIFY(b.answers->asked[0].contains(QStringLiteral("p.trackscope")));
    const core::PointTrack* recovered = b.annotation().track(0);
    QVERIFY(recovered != nullptr);
    QCOMPARE(recovered->track.at(20).x_px, 123.25f);
    QCOMPARE(recovered->track.at(20).y_px, 77.5f);
    QVERIFY(!recovered->track.at(5).visible);
    QCOMPARE(recovered->keyframes, (std::vector<int64_t>{5, 20}));
    QCOMPARE(b.projects()->project_path(), project);
    QVERIFY(b.projects()->dirty());  // recovered edits are unsaved until saved
    // The killed session's recovery file is gone; this session holds the edits in its own.
    const QStringList files = QDir(recovery).entryList({"*.trackscope-recovery"});
    QCOMPARE(files.size(), 1);
    QCOMPARE(QDir(recovery).filePath(files[0]), b.projects()->recovery_file());
    // Saving writes them into the project and removes the dead writer's temporary file.
    QVERIFY(b.projects()->save());
    QCOMPARE(core::io::load_project(project.toStdString())->points[0].track->keyframes, (std::vector<int64_t>{5, 20}));
    QVERIFY(core::io::leftover_temporary_files(project.toStdString()).empty());
    QVERIFY(!QFile::exists(b.projects()->recovery_file()));
  }

  // Issue 18: a recovery file holding a number beyond a double (1e999) aborted every start of the app. Now it is
  // reported once, moved aside, and the app starts; the next start does not mention it again.
  void an_unreadable_recovery_file_is_moved_aside_and_never_blocks_the_start() {
    QTemporaryDir dir;
    const QString video = dir.filePath("clip.mp4");
    testing::write_fake_video_file(video, 100000, 9);
    const QString recovery = dir.filePath("recovery");
    QVERIFY(QDir().mkpath(recovery));
    std::string text;
    {
      ProjectBench a({video}, dir.filePath("first-session"));
      QVERIFY(a.open(video));
      QVERIFY(a.add_and_track(40.5, 60.5));
      std::optional<core::io::Project> project = a.projects()->current_project();
      QVERIFY(project.has_value());
      project->recovery = core::io::RecoveryInfo{"", "2025-01-01T00:00:00Z"};
      text = core::io::project_to_json(*project);
    }
    const size_t at = text.find("\"frames_per_second\": ");
    QVERIFY(at != std::string::npos);
    const size_t value = at + 21, end = text.find_first_of(",\n}", value);
    text.replace(value, end - value, "1e999");
    const QString damaged = QDir(recovery).filePath("session-1-1.trackscope-recovery");
    const QString truncated = QDir(recovery).filePath("session-2-2.trackscope-recovery");
    QVERIFY(core::io::write_file_atomically(damaged.toStdString(), text).ok());
    QVERIFY(core::io::write_file_atomically(truncated.toStdString(), text.substr(0, text.size() / 3)).ok());
    {
      ProjectBench b({video}, recovery);
      b.answers->recovery = ui::RecoveryChoice::recover;
      QTRY_COMPARE_WITH_TIMEOUT(b.bench.errors.size(), 2, 5000);
      QVERIFY2(b.bench.errors.join('\n').contains(QStringLiteral("too large")), qPrintable(b.bench.errors.join('\n')));
      QVERIFY(b.bench.errors.join('\n').contains(QStringLiteral("moved aside")));
      QVERIFY(b.answers->asked.isEmpty());  // nothing was offered
      QVERIFY(!QFile::exists(damaged));
      QVERIFY(QFile::exists(damaged + ".unreadable"));
      QVERIFY(QFile::exists(truncated + ".unreadable"));
      QVERIFY(b.open(video));  // the window lives (no abort) and works
    }
    ProjectBench c({video}, recovery);
    QTest::qWait(200);
    QVERIFY2(c.bench.errors.isEmpty(), qPrintable(c.bench.errors.join('\n')));
    QVERIFY(c.answers->asked.isEmpty());
  }
};

QTEST_MAIN(ProjectTest)
#include "project_test.moc"
