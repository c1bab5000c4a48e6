// The correction loop in the workbench, driven like a user would with the fake tracker: drag a tracked point on
// some frame (a keyframe), re-track from it (forward with overwrite, backward with fill-missing), undo and redo,
// with the track data asserted at every step; marking occlusion by hand; deleting a track's past; the quality
// cues (velocity outliers, the forward-backward check) and the keyframe / suspicious-frame navigation.
#include <QAction>
#include <QMainWindow>
#include <QSignalSpy>
#include <QStatusBar>

#include <filesystem>
#include <fstream>

#include "tracking_bench.h"
#include "ui/annotation_controller.h"
#include "ui/annotation_editor.h"
#include "ui/point_list_panel.h"
#include "ui/settings.h"
#include "ui/timeline.h"
#include "ui/tracking/quality_strip.h"
#include "ui/tracking/track_quality_model.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"
#include "ui/workbench_actions.h"
#include "ui/workbench_parts.h"

using namespace std::chrono_literals;
using namespace trackscope;
using testing::fake_estimate;
using testing::kClipFrames;
using testing::kClipHeight;
using testing::kClipWidth;
using testing::TrackingBench;

namespace {

const core::Query kQuery{0, 40.5, 60.5};

core::TrackPoint original(int64_t frame) { return fake_estimate(kQuery, frame, kClipWidth, kClipHeight); }

const core::PointTrack& track_of(const TrackingBench& bench, core::PointId id = 0) {
  return *bench.annotation().track(id);
}

// Drags the track estimate of point 0 on the shown frame by `delta_widget_px`, with the mouse.
void drag_estimate(TrackingBench& bench, int64_t frame, QPoint delta_widget_px) {
  const core::TrackPoint& at = track_of(bench).track.at(frame);
  const QPoint start = bench.widget_pixel({at.x_px, at.y_px});
  QTest::mousePress(bench.canvas(), Qt::LeftButton, {}, start);
  QTest::mouseMove(bench.canvas(), start + delta_widget_px / 2);
  QTest::mouseMove(bench.canvas(), start + delta_widget_px);
  QTest::mouseRelease(bench.canvas(), Qt::LeftButton, {}, start + delta_widget_px);
}

// Tracks one point at kQuery over the clip and returns once the job finished.
bool track_one(TrackingBench& bench) {
  if (!bench.open()) return false;
  bench.add_points({{kQuery.x_px, kQuery.y_px}});
  bench.window->actions().track->trigger();
  return bench.wait_idle() && bench.tracked_points() == 1;
}

}  // namespace

class CorrectionTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void correct_retrack_undo_redo() {
    TrackingBench bench({}, "cpu");
    QVERIFY(track_one(bench));
    const core::PointTrack tracked = track_of(bench);
    for (int64_t f : {0, 20, 47}) QCOMPARE(tracked.track.at(f), original(f));
    ui::AnnotationEditor* editor = bench.window->editor();
    const size_t steps_after_track = editor->history().undo_count();

    // 1. Correct: drag the estimate on frame 20 by (30, -20) widget pixels.
    QVERIFY(bench.show_frame(20));
    bench.canvas()->setFocus();
    drag_estimate(bench, 20, QPoint(30, -20));
    const core::PointTrack corrected = track_of(bench);
    const double zoom = bench.canvas()->zoom();
    const core::TrackPoint fixed = corrected.track.at(20);
    QVERIFY(std::abs(fixed.x_px - (original(20).x_px + 30.0 / zoom)) < 1e-3);
    QVERIFY(std::abs(fixed.y_px - (original(20).y_px - 20.0 / zoom)) < 1e-3);
    QVERIFY(fixed.visible);
    QCOMPARE(fixed.p_occluded, 0.0f);
    QCOMPARE(fixed.p_far, 0.0f);
    QCOMPARE(corrected.keyframes, std::vector<int64_t>{20});
    for (int64_t f = 0; f < kClipFrames; ++f) {
      if (f != 20) QCOMPARE(corrected.track.at(f), tracked.track.at(f));
    }
    QCOMPARE(editor->history().undo_count(), steps_after_track + 1);  // the whole drag is one step
    QCOMPARE(bench.annotation().find(0)->query, kQuery);              // the query stays where it was

    // 2. Re-track forward from the keyframe (Ctrl+]), overwrite.
    QVERIFY(bench.window->actions().merge_overwrite->isChecked());
    bench.key(Qt::Key_BracketRight, Qt::ControlModifier);
    QVERIFY(bench.service()->state() != ui::TrackingState::idle);
    QVERIFY(bench.wait_idle());
    const core::PointTrack retracked = track_of(bench);
    const core::Query from_keyframe{20, fixed.x_px, fixed.y_px};
    for (int64_t f = 0; f < 20; ++f) QCOMPARE(retracked.track.at(f), tracked.track.at(f));
    QCOMPARE(retracked.track.at(20), fixed);  // the keyframe kept exactly
    for (int64_t f = 21; f < kClipFrames; ++f) {
      QCOMPARE(retracked.track.at(f), fake_estimate(from_keyframe, f, kClipWidth, kClipHeight));
    }
    QCOMPARE(retracked.keyframes, std::vector<int64_t>{20});
    QCOMPARE(retracked.provenance.model, std::string("Fake LocoTrack (default)"));
    QVERIFY(bench.window->actions().undo->text().contains(QStringLiteral("Re-track point 0 forward from frame 20")));

    // 3. Undo twice: the correction, then the tracked track, exactly.
    bench.key(Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(track_of(bench), corrected);
    bench.key(Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(track_of(bench), tracked);
    // 4. Redo twice (Ctrl+Shift+Z, Ctrl+Y): the correction, then the re-tracked result.
    bench.key(Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(track_of(bench), corrected);
    bench.key(Qt::Key_Y, Qt::ControlModifier);
    QCOMPARE(track_of(bench), retracked);
    QVERIFY(!bench.window->actions().redo->isEnabled());
    // Undoing the Track job itself removes the track (one step for all its partial results).
    for (int i = 0; i < 3; ++i) QVERIFY(editor->undo());
    QVERIFY(bench.annotation().track(0) == nullptr);
    QVERIFY(bench.annotation().find(0) != nullptr);
    QVERIFY(bench.errors.isEmpty());
  }

  void delete_past_then_fill_it_backward_from_a_keyframe() {
    TrackingBench bench({}, "cpu");
    QVERIFY(track_one(bench));
    bench.window->editor()->select_point(0);
    QVERIFY(bench.show_frame(10));
    bench.key(Qt::Key_Backspace, Qt::ControlModifier);  // delete the track before frame 10
    QCOMPARE(track_of(bench).track.first_frame, int64_t{10});
    // Moving the query (frame 0, no longer covered) does not grow the track back; the track learns the query.
    QVERIFY(bench.window->editor()->move_point(0, {0, 41.5, 61.5}));
    bench.window->editor()->finish_move(0);
    QCOMPARE(track_of(bench).track.first_frame, int64_t{10});
    QCOMPARE(track_of(bench).track.query, (core::Query{0, 41.5, 61.5}));
    QVERIFY(bench.show_frame(20));
    drag_estimate(bench, 20, QPoint(0, 24));
    const core::PointTrack corrected = track_of(bench);
    const core::TrackPoint fixed = corrected.track.at(20);

    bench.window->annotations()->set_merge_policy(core::MergePolicy::fill_missing);
    QCOMPARE(bench.window->settings().merge_policy(), core::MergePolicy::fill_missing);
    QVERIFY(bench.window->annotations()->retrack(core::RetrackDirection::backward));
    QVERIFY(bench.wait_idle());
    const core::PointTrack filled = track_of(bench);
    QCOMPARE(filled.track.first_frame, int64_t{0});
    QCOMPARE(filled.track.end_frame(), kClipFrames);
    const core::Query from_keyframe{20, fixed.x_px, fixed.y_px};
    for (int64_t f = 0; f < 10; ++f)
      QCOMPARE(filled.track.at(f), fake_estimate(from_keyframe, f, kClipWidth, kClipHeight));
    for (int64_t f = 10; f < kClipFrames; ++f)
      QCOMPARE(filled.track.at(f), corrected.track.at(f));  // only what was missing
    QVERIFY(bench.window->editor()->undo());
    QCOMPARE(track_of(bench), corrected);

    // Re-tracking needs a keyframe on the shown frame.
    QVERIFY(bench.show_frame(30));
    QVERIFY(!bench.window->annotations()->retrack(core::RetrackDirection::forward));
  }

  void occlusion_by_hand_and_navigation() {
    TrackingBench bench({}, "cpu");
    QVERIFY(track_one(bench));
    bench.window->editor()->select_point(0);
    QVERIFY(bench.show_frame(5));
    QVERIFY(track_of(bench).track.at(5).visible);
    bench.key(Qt::Key_O);
    QVERIFY(!track_of(bench).track.at(5).visible);
    QCOMPARE(track_of(bench).track.at(5).p_occluded, 1.0f);
    QCOMPARE(track_of(bench).keyframes, std::vector<int64_t>{5});
    bench.key(Qt::Key_O);
    QVERIFY(track_of(bench).track.at(5).visible);
    QVERIFY(bench.window->editor()->undo());
    QVERIFY(!track_of(bench).track.at(5).visible);

    // A correction without re-tracking leaves a jump: frames 25 and 27 become velocity outliers.
    QVERIFY(bench.show_frame(26));
    drag_estimate(bench, 26, QPoint(40, 0));
    const core::TrackQuality* cues = bench.window->annotations()->quality()->quality(0);
    QVERIFY(cues != nullptr);
    QVERIFY(cues->flags_at(25) & core::quality_velocity_outlier);
    QVERIFY(cues->flags_at(27) & core::quality_velocity_outlier);
    QCOMPARE(cues->flags_at(26), uint8_t{0});  // the keyframe itself is the user's word
    QCOMPARE(cues->flagged_count(), int64_t{2});
    // Navigation from frame 0: next keyframe 5, then 26; next suspicious 25, then 27.
    QVERIFY(bench.show_frame(0));
    bench.key(Qt::Key_K);
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{5});
    bench.key(Qt::Key_K);
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{26});
    bench.key(Qt::Key_K, Qt::ShiftModifier);
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{5});
    bench.key(Qt::Key_N);
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{25});
    bench.key(Qt::Key_N);
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{27});
    bench.key(Qt::Key_N);  // nothing after 27: stays, and says so
    QCOMPARE(bench.window->session()->requested_frame(), int64_t{27});
    QVERIFY(bench.window->statusBar()->currentMessage().contains(QStringLiteral("No suspicious frame")));

    // The strip has one row, for point 0; a click on it selects the point and seeks.
    ui::QualityStrip* strip = bench.window->annotations()->quality_strip();
    QCOMPARE(strip->rows(), std::vector<core::PointId>{0});
    bench.window->editor()->select_point(std::nullopt);
    const int x = static_cast<int>(strip->x_of(12));
    QTest::mouseClick(strip, Qt::LeftButton, {}, QPoint(x, 4));
    QTRY_COMPARE(bench.window->session()->requested_frame(), int64_t{12});
    QCOMPARE(bench.window->editor()->selected_point(), std::optional<core::PointId>(0));
  }

  void forward_backward_check_flags_the_frames_that_disagree() {
    TrackingBench bench({}, "cpu");
    QVERIFY(track_one(bench));
    bench.window->editor()->select_point(0);
    // An unedited fake track is its own reverse: consistent everywhere.
    bench.window->actions().check_consistency->trigger();
    QVERIFY(bench.wait_idle());
    const ui::TrackQualityModel* quality = bench.window->annotations()->quality();
    QVERIFY(quality->has_consistency(0));
    for (int64_t f = 0; f < kClipFrames; ++f) QVERIFY(!(quality->quality(0)->flags_at(f) & core::quality_inconsistent));

    // Correct frame 20 by 12 px and re-track forward: frames >= 20 follow a line 12 px off the old one. The check
    // re-tracks from the far end (frame 47, on the new line), so the frames before 20 disagree by 12 px.
    QVERIFY(bench.show_frame(20));
    const core::TrackPoint before = track_of(bench).track.at(20);
    bench.window->editor()->move_estimate(0, 20, before.x_px, before.y_px + 12.0);
    bench.window->editor()->finish_move(0);
    QVERIFY(!quality->has_consistency(0));  // the track changed: the old check no longer applies
    QVERIFY(bench.window->annotations()->retrack(core::RetrackDirection::forward));
    QVERIFY(bench.wait_idle());
    bench.window->actions().check_consistency->trigger();
    QVERIFY(bench.wait_idle());
    const core::TrackQuality* cues = quality->quality(0);
    QVERIFY(quality->has_consistency(0));
    QCOMPARE(cues->consistency_error_px.size(), size_t(kClipFrames));
    QVERIFY(track_of(bench).track.at(15).visible);
    QVERIFY(std::abs(cues->consistency_error_px[15] - 12.0f) < 1e-3f);
    int inconsistent_before = 0, inconsistent_after = 0;
    for (int64_t f = 0; f < kClipFrames; ++f) {
      const bool flagged = cues->flags_at(f) & core::quality_inconsistent;
      (f < 20 ? inconsistent_before : inconsistent_after) += flagged ? 1 : 0;
    }
    QVERIFY(inconsistent_before >= 10);  // every visible frame before the keyframe
    QCOMPARE(inconsistent_after, 0);
  }

  // The "uncertain" cue follows the thresholds of the model that made the tracks: the fake model has no manifest
  // (defaults: nothing flagged, its p_far is 0.05); a model whose manifest calibrates p_far to 0.05 flags every
  // visible frame but the query frame.
  void uncertain_cue_uses_the_calibrated_thresholds_of_the_model() {
    TrackingBench bench({}, "cpu");
    QVERIFY(track_one(bench));
    ui::TrackQualityModel* quality = bench.window->annotations()->quality();
    QVERIFY(quality->options_source().rfind("defaults", 0) == 0);
    QCOMPARE(quality->quality(0)->flagged_count(), int64_t{0});

    const std::filesystem::path dir = std::filesystem::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "calibrated_model";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "model.json") << R"({"format": "trackscope.model-manifest",
        "calibration": {"suspicious_thresholds": {"p_far": 0.05}}})";
    core::TrackerDescription tracker;
    tracker.weights_path = (dir / "model.safetensors").string();
    QSignalSpy changed(quality, &ui::TrackQualityModel::changed);
    quality->use_model(tracker);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(quality->options().uncertain_p_far, 0.05f);
    QCOMPARE(QString::fromStdString(quality->options_source()), QString::fromStdString((dir / "model.json").string()));
    int64_t visible_after_query = 0;
    for (int64_t f = 1; f < kClipFrames; ++f) visible_after_query += track_of(bench).track.at(f).visible ? 1 : 0;
    QCOMPARE(quality->quality(0)->flagged_count(), visible_after_query);
    QVERIFY(quality->quality(0)->flags_at(1) & core::quality_uncertain);
    // The same thresholds again change nothing; the model without a manifest goes back to the defaults.
    quality->use_model(tracker);
    QCOMPARE(changed.count(), 1);
    quality->use_model({});
    QCOMPARE(changed.count(), 2);
    QCOMPARE(quality->quality(0)->flagged_count(), int64_t{0});
  }

  void help_lists_every_shortcut_of_the_window() {
    TrackingBench bench({}, "cpu");
    const std::vector<ui::ShortcutDescription> rows = ui::shortcut_descriptions(bench.window->actions());
    auto listed = [&](const QString& keys, const QString& words) {
      return std::any_of(rows.begin(), rows.end(), [&](const ui::ShortcutDescription& row) {
        return row.keys == keys && row.action.contains(words);
      });
    };
    auto native = [](const QKeySequence& sequence) { return sequence.toString(QKeySequence::NativeText); };
    QVERIFY(listed(native(QKeySequence(Qt::CTRL | Qt::Key_Z)), QStringLiteral("Undo")));
    QVERIFY(listed(
        native(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)) + ", " + native(QKeySequence(Qt::CTRL | Qt::Key_Y)),
        QStringLiteral("Redo")));
    QVERIFY(listed(native(QKeySequence(Qt::CTRL | Qt::Key_R)), QStringLiteral("Re-track Both Ways")));
    QVERIFY(listed(QStringLiteral("K"), QStringLiteral("Next Keyframe")));
    QVERIFY(listed(QStringLiteral("N"), QStringLiteral("Next Suspicious Frame")));
    QVERIFY(listed(QStringLiteral("O"), QStringLiteral("Occluded")));
    QVERIFY(listed(native(QKeySequence::Save), QStringLiteral("Save Project")));
    // Every shortcut of the window appears in Help, so the list cannot drift from the keys.
    for (const QAction* action : bench.window->QWidget::actions()) {  // every action added to the window
      for (const QKeySequence& sequence : action->shortcuts()) {
        const bool found = std::any_of(rows.begin(), rows.end(), [&](const ui::ShortcutDescription& row) {
          return row.keys.split(QStringLiteral(", ")).contains(native(sequence));
        });
        QVERIFY2(found, qPrintable(action->objectName() + ": " + native(sequence)));
      }
    }
  }

  // The controller works with the parts it is given, with no MainWindow anywhere: navigation asks for a seek
  // through its signal (the timeline paused), and a miss goes to the status bar it was given.
  void annotation_controller_needs_no_window() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    QMainWindow host;  // only the menus' and the parts' parent
    ui::Settings settings(folder.filePath("settings.ini"));
    settings.set_merge_policy(core::MergePolicy::fill_missing);
    const ui::WorkbenchActions actions = ui::create_workbench_actions(&host);
    auto* centre = new QWidget(&host);
    auto* editor = new ui::AnnotationEditor(&host);
    auto* session = new ui::VideoSession({}, {}, &host);
    const ui::WorkbenchParts parts{editor,
                                   session,
                                   new ui::VideoCanvas(editor, centre),
                                   new ui::Timeline(centre),
                                   new ui::PointListPanel(editor, centre),
                                   &settings,
                                   &actions,
                                   host.statusBar(),
                                   &host};
    ui::AnnotationController controller(parts, nullptr, nullptr);
    QCOMPARE(controller.merge_policy(), core::MergePolicy::fill_missing);  // from the Settings part
    QCOMPARE(controller.quality_strip()->parentWidget(), centre);          // beside the timeline, not top-level

    const core::Query query{12, 40.5, 60.5};
    const core::PointId id = editor->add_point(query);  // selected
    core::Track track;
    track.query = query;
    for (int64_t f = 0; f < kClipFrames; ++f) track.points.push_back(fake_estimate(query, f, kClipWidth, kClipHeight));
    QVERIFY(editor->set_track(id, std::move(track), {"fake", "cpu", "fp32"}));

    QSignalSpy seeks(&controller, &ui::AnnotationController::seek_requested);
    QCOMPARE(controller.go_to_keyframe(false), std::optional<int64_t>(12));  // the query frame, after frame 0
    QCOMPARE(seeks.size(), 1);
    QCOMPARE(seeks.at(0).at(0).toLongLong(), 12);
    QCOMPARE(controller.go_to_keyframe(true), std::nullopt);  // none before frame 0
    QCOMPARE(seeks.size(), 1);
    QCOMPARE(host.statusBar()->currentMessage(), QStringLiteral("No keyframe before this frame"));
  }
};

QTEST_MAIN(CorrectionTest)
#include "correction_test.moc"
