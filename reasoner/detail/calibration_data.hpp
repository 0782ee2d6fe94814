// The shipped calibration file's bytes, generated into the build from reasoner/calibration.json
// (reasoner/CMakeLists.txt), so the calibrators travel inside the binary.
#pragma once

#include <string_view>

namespace glassbox::reasoner::detail {

std::string_view calibration_json() noexcept;

}  // namespace glassbox::reasoner::detail
