# libjpeg-turbo and libpng for JPEG/PNG image sequences (core/video/still_image.cpp): they give the pixels PIL and
# OpenCV give (FFmpeg's mjpeg decoder does not). Defines the imported target Trackscope::still_image.
#
# Why not pkg_check_modules alone: the GPU machine has no libjpeg/libpng dev files and builds against the Debian
# packages that tools/gpu/prepare.sh carries, unpacked under a prefix listed in CMAKE_PREFIX_PATH. Their .pc files
# still say prefix=/usr, and libjpeg's jconfig.h sits in the multiarch folder include/x86_64-linux-gnu, which no .pc
# file names. So the headers and libraries are searched with find_path/find_library (CMAKE_PREFIX_PATH first, then
# pkg-config's folders as hints, then the system), and each library is taken from the prefix its header came from,
# so that a jpeglib.h of one libjpeg (API 62) is never linked against another (API 8: it would refuse to run).
# Override with -DTRACKSCOPE_JPEG_INCLUDE_DIR=... -DTRACKSCOPE_JPEG_LIBRARY=... (and _PNG_) if needed.

find_package(PkgConfig REQUIRED)
pkg_check_modules(TRACKSCOPE_PC_JPEG QUIET libjpeg)
pkg_check_modules(TRACKSCOPE_PC_PNG QUIET libpng)

# The installation prefix of a header folder: the part before its last "include" component.
function(trackscope_prefix_of include_dir out_var)
  set(dir "${include_dir}")
  set(prefix "")
  while(dir AND NOT dir STREQUAL "/")
    get_filename_component(name "${dir}" NAME)
    get_filename_component(dir "${dir}" DIRECTORY)
    if(name STREQUAL "include")
      set(prefix "${dir}")
      break()
    endif()
  endwhile()
  set(${out_var} "${prefix}" PARENT_SCOPE)
endfunction()

# Finds LIBRARY among NAMES in the prefix of INCLUDE_DIR first, then anywhere.
function(trackscope_find_library_beside var include_dir)
  set(names ${ARGN})
  trackscope_prefix_of("${include_dir}" prefix)
  if(prefix)
    find_library(${var} NAMES ${names} PATHS "${prefix}/lib/${CMAKE_LIBRARY_ARCHITECTURE}" "${prefix}/lib"
                 "${prefix}/lib64" NO_DEFAULT_PATH)
  endif()
  find_library(${var} NAMES ${names} HINTS ${TRACKSCOPE_PC_JPEG_LIBRARY_DIRS} ${TRACKSCOPE_PC_PNG_LIBRARY_DIRS})
endfunction()

set(_trackscope_still_hint "On Debian/Ubuntu: apt-get install libjpeg62-turbo-dev libpng-dev (tools/install-deps.sh); on the \
GPU machine: tools/gpu/prepare.sh carries them, and `source .gpu-carry/gpu_env.sh` puts them on CMAKE_PREFIX_PATH")

# libjpeg: jpeglib.h includes jconfig.h, which Debian and Ubuntu keep in the multiarch folder.
find_path(TRACKSCOPE_JPEG_INCLUDE_DIR jpeglib.h HINTS ${TRACKSCOPE_PC_JPEG_INCLUDE_DIRS})
if(TRACKSCOPE_JPEG_INCLUDE_DIR)
  find_path(TRACKSCOPE_JCONFIG_INCLUDE_DIR jconfig.h
            PATHS "${TRACKSCOPE_JPEG_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}" "${TRACKSCOPE_JPEG_INCLUDE_DIR}"
            NO_DEFAULT_PATH)
  trackscope_find_library_beside(TRACKSCOPE_JPEG_LIBRARY "${TRACKSCOPE_JPEG_INCLUDE_DIR}" jpeg)
endif()
if(NOT TRACKSCOPE_JPEG_INCLUDE_DIR OR NOT TRACKSCOPE_JCONFIG_INCLUDE_DIR OR NOT TRACKSCOPE_JPEG_LIBRARY)
  message(FATAL_ERROR "libjpeg(-turbo) not found (jpeglib.h: ${TRACKSCOPE_JPEG_INCLUDE_DIR}, jconfig.h: "
                      "${TRACKSCOPE_JCONFIG_INCLUDE_DIR}, libjpeg: ${TRACKSCOPE_JPEG_LIBRARY}). "
                      "${_trackscope_still_hint}")
endif()
file(STRINGS "${TRACKSCOPE_JCONFIG_INCLUDE_DIR}/jconfig.h" _jpeg_api REGEX "^#define[ \t]+JPEG_LIB_VERSION[ \t]+[0-9]+")
string(REGEX REPLACE ".*JPEG_LIB_VERSION[ \t]+([0-9]+).*" "\\1" _jpeg_api "${_jpeg_api}")
file(STRINGS "${TRACKSCOPE_JCONFIG_INCLUDE_DIR}/jconfig.h" _jpeg_version
     REGEX "^#define[ \t]+LIBJPEG_TURBO_VERSION[ \t]+[0-9.]+")
string(REGEX REPLACE ".*LIBJPEG_TURBO_VERSION[ \t]+([0-9.]+).*" "\\1" _jpeg_version "${_jpeg_version}")
# The library's soname follows its API (62: libjpeg.so.62, 80: libjpeg.so.8): a mismatch would fail at run time.
get_filename_component(_jpeg_real "${TRACKSCOPE_JPEG_LIBRARY}" REALPATH)
if(_jpeg_api AND _jpeg_real MATCHES "libjpeg\\.so\\.([0-9]+)")
  set(_jpeg_so "${CMAKE_MATCH_1}")
  math(EXPR _jpeg_api_major "${_jpeg_api} / 10")
  if(NOT (_jpeg_so EQUAL _jpeg_api OR _jpeg_so EQUAL _jpeg_api_major))
    message(FATAL_ERROR "${TRACKSCOPE_JCONFIG_INCLUDE_DIR}/jconfig.h is libjpeg API ${_jpeg_api} but "
                        "${TRACKSCOPE_JPEG_LIBRARY} is ${_jpeg_real}: point TRACKSCOPE_JPEG_INCLUDE_DIR, "
                        "TRACKSCOPE_JCONFIG_INCLUDE_DIR and TRACKSCOPE_JPEG_LIBRARY at one libjpeg")
  endif()
endif()
if(NOT _jpeg_version)
  message(WARNING "${TRACKSCOPE_JPEG_INCLUDE_DIR}/jpeglib.h is not libjpeg-turbo: JPEG sequences may not give the "
                  "pixels PIL and OpenCV give (docs/video-decoding.md)")
endif()

# libpng: Debian's png.h in include/ forwards to include/libpng16/.
find_path(TRACKSCOPE_PNG_INCLUDE_DIR png.h HINTS ${TRACKSCOPE_PC_PNG_INCLUDE_DIRS} PATH_SUFFIXES libpng16)
if(TRACKSCOPE_PNG_INCLUDE_DIR)
  trackscope_find_library_beside(TRACKSCOPE_PNG_LIBRARY "${TRACKSCOPE_PNG_INCLUDE_DIR}" png16 png)
endif()
if(NOT TRACKSCOPE_PNG_INCLUDE_DIR OR NOT TRACKSCOPE_PNG_LIBRARY)
  message(FATAL_ERROR "libpng not found (png.h: ${TRACKSCOPE_PNG_INCLUDE_DIR}, libpng: ${TRACKSCOPE_PNG_LIBRARY}). "
                      "${_trackscope_still_hint}")
endif()
file(STRINGS "${TRACKSCOPE_PNG_INCLUDE_DIR}/png.h" _png_version REGEX "^#define[ \t]+PNG_LIBPNG_VER_STRING")
string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" _png_version "${_png_version}")

message(STATUS "Trackscope: libjpeg-turbo ${_jpeg_version} (API ${_jpeg_api}) ${TRACKSCOPE_JPEG_LIBRARY}; "
               "libpng ${_png_version} ${TRACKSCOPE_PNG_LIBRARY}")

add_library(trackscope_still_image INTERFACE IMPORTED)
# -isystem as for every imported target: the headers are third-party.
set_target_properties(trackscope_still_image PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES
    "${TRACKSCOPE_JPEG_INCLUDE_DIR};${TRACKSCOPE_JCONFIG_INCLUDE_DIR};${TRACKSCOPE_PNG_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "${TRACKSCOPE_JPEG_LIBRARY};${TRACKSCOPE_PNG_LIBRARY}")
add_library(Trackscope::still_image ALIAS trackscope_still_image)
