# Sanitizer builds: TRACKSCOPE_SANITIZE_{ADDRESS,UNDEFINED,THREAD}.
# TRACKSCOPE_SANITIZE_GPU=OFF (what tools/ci/sanitizers.sh uses) instruments only the project's own code outside
# gpu/: core, ui, app and their tests (trackscope_apply_sanitizers(), called at the end of the top-level
# CMakeLists.txt). The torch-side translation units of gpu/ then compile with exactly the flags of the normal build,
# so ccache serves them from it, and libtrackscope_gpu.so runs uninstrumented inside the sanitized executables
# (fine for ASan and UBSan; TSan sees the threads the project's own code starts).
option(TRACKSCOPE_SANITIZE_GPU "Instrument gpu/ too (OFF: only core, ui, app and the tests)" ON)
set(_trackscope_sanitizers "")
if(TRACKSCOPE_SANITIZE_ADDRESS)
  list(APPEND _trackscope_sanitizers address)
endif()
if(TRACKSCOPE_SANITIZE_UNDEFINED)
  list(APPEND _trackscope_sanitizers undefined)
endif()
if(TRACKSCOPE_SANITIZE_THREAD)
  list(APPEND _trackscope_sanitizers thread)
endif()
set(TRACKSCOPE_SANITIZE_COMPILE_OPTIONS "")
if(_trackscope_sanitizers)
  list(JOIN _trackscope_sanitizers "," _trackscope_sanitize_list)
  # -O0: instrumented code then compiles as fast as the normal build's -O2 (core/io/project.cpp with ASan + UBSan:
  # 13.4 s of CPU at -O0, 26.2 s at -O1, 36.6 s at -O2; 12.4 s uninstrumented at -O2); the tests spend their time
  # in FFmpeg, Qt and LibTorch, which stay optimised.
  set(TRACKSCOPE_SANITIZE_COMPILE_OPTIONS -fsanitize=${_trackscope_sanitize_list} -fno-omit-frame-pointer -O0)
  if(TRACKSCOPE_SANITIZE_UNDEFINED)
    # Undefined behaviour fails the test that triggers it instead of scrolling past in its log.
    list(APPEND TRACKSCOPE_SANITIZE_COMPILE_OPTIONS -fno-sanitize-recover=undefined)
  endif()
  add_link_options(-fsanitize=${_trackscope_sanitize_list})
  if(TRACKSCOPE_SANITIZE_GPU)
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${TRACKSCOPE_SANITIZE_COMPILE_OPTIONS}>")
  endif()
endif()

# trackscope_apply_sanitizers(<folder>...): with TRACKSCOPE_SANITIZE_GPU=OFF, the sanitizer flags on every target
# defined in the given source folders (recursively).
function(trackscope_apply_sanitizers)
  if(NOT TRACKSCOPE_SANITIZE_COMPILE_OPTIONS OR TRACKSCOPE_SANITIZE_GPU)
    return()
  endif()
  set(folders "")
  foreach(folder IN LISTS ARGN)
    list(APPEND folders "${PROJECT_SOURCE_DIR}/${folder}")
  endforeach()
  while(folders)
    list(POP_FRONT folders folder)
    if(NOT IS_DIRECTORY "${folder}")
      continue()
    endif()
    get_property(known DIRECTORY "${folder}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS known)
      get_target_property(type ${target} TYPE)
      if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
        target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${TRACKSCOPE_SANITIZE_COMPILE_OPTIONS}>")
      endif()
    endforeach()
    get_property(children DIRECTORY "${folder}" PROPERTY SUBDIRECTORIES)
    list(APPEND folders ${children})
  endwhile()
endfunction()
