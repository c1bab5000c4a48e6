#pragma once
// The GUI's wiring to gpu/: the tracker factory and the device telemetry handed to the main window.
//
//   ui::MainWindowOptions options;
//   options.tracker_factory = make_gui_tracker_factory();          // THE wiring point of the tracker
//   options.telemetry_factory = make_gui_telemetry_factory();      // NVML for cuda:N, /proc/stat for the CPU

#include <memory>

#include "core/tracking/point_tracker.h"
#include "ui/tracking/telemetry_monitor.h"

namespace trackscope::app {

/// The TrackerFactory of the GUI. Single wiring point: see tracker_wiring.cpp.
std::unique_ptr<core::TrackerFactory> make_gui_tracker_factory();

/// Telemetry of a tracker device: gpu::open_device_telemetry (NVML loaded at run time; "no telemetry: why"
/// without the driver), after resolving the id to the device's description.
ui::TelemetrySourceFactory make_gui_telemetry_factory();

}  // namespace trackscope::app
