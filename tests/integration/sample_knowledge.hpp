// ops/sample, the knowledge the end-to-end tests load (its path is a compile definition from
// CMake).
#pragma once

#include <filesystem>

namespace glassbox::integration {

inline const std::filesystem::path kSample = GLASSBOX_SAMPLE_DIR;

}  // namespace glassbox::integration
