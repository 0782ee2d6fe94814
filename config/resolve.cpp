// Resolution: defaults, then state, file, environment and flags, each value with its origin.
#include "config/resolve.hpp"

#include <cstdlib>
#include <stdexcept>

namespace glassbox::config {
namespace {

using base::ErrorType;
using base::make_error;

}  // namespace

std::string Origin::describe() const {
    switch (source) {
        case Source::kDefault:
            return "default";
        case Source::kState:
            return "state " + where;
        case Source::kFile:
            return where;
        case Source::kEnv:
            return "env " + where;
        case Source::kFlag:
            return "flag " + where;
    }
    return where;
}

void Layer::set(std::string key, Value value, Origin origin) {
    entries.push_back(Entry{std::move(key), std::move(value), std::move(origin)});
}

base::Result<Layer> read_env(const Registry& registry, const EnvLookup& lookup) {
    Layer layer;
    for (const auto& setting : registry.settings()) {
        std::vector<std::string> names{setting.env_name()};
        names.insert(names.end(), setting.env_aliases.begin(), setting.env_aliases.end());
        for (const auto& name : names) {
            const auto text = lookup(name);
            if (!text || text->empty()) continue;
            auto value = setting.parse_text(*text);
            if (!value)
                return make_error(ErrorType::kInvalidRequest,
                                  "env " + name + ": " + value.error().message);
            layer.set(setting.key, std::move(value).value(), Origin{Source::kEnv, name});
            break;  // the first name set wins
        }
    }
    return layer;
}

std::optional<std::string> process_env(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
}

base::Result<Layer> read_flags(const Registry& registry, const std::vector<FlagValue>& flags) {
    Layer layer;
    for (const auto& flag : flags) {
        const Setting* setting = registry.find(flag.key);
        if (setting == nullptr)
            throw std::logic_error("flag " + flag.flag + " sets unknown setting " + flag.key);
        auto value = setting->parse_text(flag.text);
        if (!value)
            return make_error(ErrorType::kInvalidRequest,
                              "flag " + flag.flag + ": " + value.error().message);
        layer.set(flag.key, std::move(value).value(), Origin{Source::kFlag, flag.flag});
    }
    return layer;
}

Resolved::Resolved(const Registry& registry, const std::vector<const Layer*>& layers)
    : registry_(&registry) {
    for (const auto& setting : registry.settings()) {
        values_.emplace(setting.key, Effective{setting.fallback, Origin{}});
    }
    for (const Layer* layer : layers) {
        if (layer == nullptr) continue;
        for (const auto& entry : layer->entries) {
            const auto found = values_.find(entry.key);
            if (found == values_.end())
                throw std::logic_error("a layer sets unknown setting " + entry.key);
            found->second = Effective{entry.value, entry.origin};
        }
    }
}

const Resolved::Effective& Resolved::at(std::string_view key) const {
    const auto found = values_.find(key);
    if (found == values_.end()) throw std::logic_error("no setting " + std::string(key));
    return found->second;
}

const Value& Resolved::value(std::string_view key) const { return at(key).value; }

const Origin& Resolved::origin(std::string_view key) const { return at(key).origin; }

const std::string& Resolved::text(std::string_view key) const {
    const auto* v = std::get_if<std::string>(&at(key).value);
    if (v == nullptr) throw std::logic_error("setting " + std::string(key) + " is not text");
    return *v;
}

std::int64_t Resolved::integer(std::string_view key) const {
    const auto* v = std::get_if<std::int64_t>(&at(key).value);
    if (v == nullptr) throw std::logic_error("setting " + std::string(key) + " is not an integer");
    return *v;
}

double Resolved::number(std::string_view key) const {
    const auto* v = std::get_if<double>(&at(key).value);
    if (v == nullptr) throw std::logic_error("setting " + std::string(key) + " is not a number");
    return *v;
}

bool Resolved::boolean(std::string_view key) const {
    const auto* v = std::get_if<bool>(&at(key).value);
    if (v == nullptr) throw std::logic_error("setting " + std::string(key) + " is not a boolean");
    return *v;
}

}  // namespace glassbox::config
