// A service setting that names one of a few choices ("provider": "hashing" | "openai"), read
// like service_config.hpp's kinds: one reader the llm and embeddings configs both use.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/runtime/service_config.hpp"

namespace glassbox::runtime {

namespace detail {

// A text that must be one of `names`; `choose` gets the index of the one given. Otherwise
// kInvalidRequest `<service> setting "<key>" must be "a" or "b", not "c"`.
SettingReader choice_setting(std::string_view service, std::string_view key,
                             std::vector<std::string_view> names,
                             std::function<void(std::size_t)> choose);

}  // namespace detail

// A text that must name one of `choices`; its value goes to `out` (a T or an optional<T>, which
// must outlive the read). `service` names the settings in the error ("llm", "embeddings").
template <typename T, typename Out>
SettingReader choice_setting(std::string_view service, std::string_view key,
                             std::initializer_list<std::pair<std::string_view, T>> choices,
                             Out& out) {
    std::vector<std::string_view> names;
    std::vector<T> values;
    for (const auto& [name, value] : choices) {
        names.push_back(name);
        values.push_back(value);
    }
    return detail::choice_setting(
        service, key, std::move(names),
        [values = std::move(values), &out](std::size_t i) { out = values[i]; });
}

}  // namespace glassbox::runtime
