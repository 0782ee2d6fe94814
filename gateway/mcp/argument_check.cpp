// The inputSchema subset check behind every tools/call.
#include "gateway/mcp/argument_check.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace glassbox::gateway::mcp {

namespace {

std::optional<std::string> check_string(const std::string& name, const nlohmann::json& rule,
                                        const nlohmann::json& value) {
    if (!value.is_string()) return "argument '" + name + "' must be a string";
    const auto& text = value.get_ref<const std::string&>();
    if (auto min = rule.find("minLength");
        min != rule.end() && text.size() < min->get<std::size_t>()) {
        return "argument '" + name + "' must not be empty";
    }
    if (auto max = rule.find("maxLength");
        max != rule.end() && text.size() > max->get<std::size_t>()) {
        return "argument '" + name + "' is longer than " + std::to_string(max->get<std::size_t>()) +
               " characters";
    }
    if (auto allowed = rule.find("enum"); allowed != rule.end()) {
        if (std::find(allowed->begin(), allowed->end(), value) == allowed->end()) {
            return "argument '" + name + "' must be one of " + allowed->dump();
        }
    }
    return std::nullopt;
}

std::optional<std::string> check_integer(const std::string& name, const nlohmann::json& rule,
                                         const nlohmann::json& value) {
    if (!value.is_number_integer()) return "argument '" + name + "' must be an integer";
    auto n = value.get<long long>();
    auto min = rule.find("minimum");
    auto max = rule.find("maximum");
    if ((min != rule.end() && n < min->get<long long>()) ||
        (max != rule.end() && n > max->get<long long>())) {
        return "argument '" + name + "' must be between " +
               (min != rule.end() ? min->dump() : "-inf") + " and " +
               (max != rule.end() ? max->dump() : "inf");
    }
    return std::nullopt;
}

std::optional<std::string> check_property(const std::string& name, const nlohmann::json& rule,
                                          const nlohmann::json& value) {
    const std::string type = rule.value("type", "");
    if (type == "string") return check_string(name, rule, value);
    if (type == "integer") return check_integer(name, rule, value);
    if (type == "boolean" && !value.is_boolean())
        return "argument '" + name + "' must be a boolean";
    if (type == "object" && !value.is_object()) return "argument '" + name + "' must be an object";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> check_arguments(const nlohmann::json& schema,
                                           const nlohmann::json& args) {
    if (!args.is_object()) return "arguments must be an object";
    const auto& properties = schema.at("properties");
    for (const auto& name : schema.value("required", nlohmann::json::array())) {
        if (!args.contains(name.get<std::string>())) {
            return "missing argument '" + name.get<std::string>() + "'";
        }
    }
    bool closed = schema.value("additionalProperties", true) == false;
    for (const auto& [name, value] : args.items()) {
        auto rule = properties.find(name);
        if (rule == properties.end()) {
            if (closed) return "unknown argument '" + name + "'";
            continue;
        }
        if (auto why = check_property(name, *rule, value)) return why;
    }
    return std::nullopt;
}

std::optional<std::string> take_alias(nlohmann::json& args, std::string_view name,
                                      std::string_view alias) {
    if (!args.is_object()) return std::nullopt;
    const auto given = args.find(alias);
    if (given == args.end()) return std::nullopt;
    const auto named = args.find(name);
    if (named == args.end()) {
        args[std::string(name)] = std::move(*given);
    } else if (*named != *given) {
        return "'" + std::string(name) + "' and '" + std::string(alias) + "' (another name for " +
               std::string(name) + ") differ: give one of them";
    }
    args.erase(std::string(alias));
    return std::nullopt;
}

}  // namespace glassbox::gateway::mcp
