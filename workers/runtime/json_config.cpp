// The choice setting of a service's JSON config: its check and the error naming the choices.
#include "workers/runtime/json_config.hpp"

#include <string>

namespace glassbox::runtime::detail {

namespace {

// "\"a\" or \"b\"", "\"a\", \"b\" or \"c\"".
std::string quoted_choices(const std::vector<std::string_view>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
        text += "\"" + std::string(names[i]) + "\"";
    }
    return text;
}

}  // namespace

SettingReader choice_setting(std::string_view service, std::string_view key,
                             std::vector<std::string_view> names,
                             std::function<void(std::size_t)> choose) {
    return {key,
            [service = std::string(service), names = std::move(names), choose = std::move(choose)](
                const ServiceSettings& settings, const std::string& name) -> base::Result<void> {
                auto text = settings.text(name);
                if (!text) return std::move(text).error();
                for (std::size_t i = 0; i < names.size(); ++i) {
                    if (*text == names[i]) {
                        choose(i);
                        return {};
                    }
                }
                return invalid_setting(service + " setting \"" + name + "\" must be " +
                                       quoted_choices(names) + ", not \"" + *text + "\"");
            }};
}

}  // namespace glassbox::runtime::detail
