// Layers of settings (runtime state, a file, the environment, flags) and resolving them, with
// where each effective value came from.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "config/setting.hpp"

namespace glassbox::config {

// Lowest precedence first: a later source overrides an earlier one.
enum class Source { kDefault, kState, kFile, kEnv, kFlag };

struct Origin {
    Source source = Source::kDefault;
    std::string where;  // state or config file path (with ":line" for a file), variable, flag

    // "default", "state /h/run/endpoints.json", "/h/config.toml:12", "env GLASSBOX_X", "flag --x".
    std::string describe() const;
};

// The values one source gives, already checked against their settings.
struct Layer {
    struct Entry {
        std::string key;
        Value value;
        Origin origin;
    };
    std::vector<Entry> entries;

    // Later entries for the same key win.
    void set(std::string key, Value value, Origin origin);
};

// Each setting's text from the environment: the mechanical name first, then older aliases. An
// empty variable counts as unset. A bad value is InvalidRequest naming the variable and the key
// ("env GLASSBOX_BROKER_HEARTBEAT_MS: broker.heartbeat_ms: expected ..., got \"fast\"").
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
base::Result<Layer> read_env(const Registry& registry, const EnvLookup& lookup);
// The process environment (getenv); read once, at start-up, before threads start.
std::optional<std::string> process_env(const std::string& name);

// One text per flag given on the command line, in order.
struct FlagValue {
    std::string key;
    std::string flag;  // "--heartbeat-ms"
    std::string text;
};
// InvalidRequest naming the flag and the key for a bad value.
base::Result<Layer> read_flags(const Registry& registry, const std::vector<FlagValue>& flags);

// The effective value of every setting of a registry and its origin.
class Resolved {
public:
    // Defaults, then each layer in order (lowest precedence first).
    Resolved(const Registry& registry, const std::vector<const Layer*>& layers);

    const Registry& registry() const noexcept { return *registry_; }
    // These throw std::logic_error for a key the registry does not have, or of another kind:
    // a programmer error, never a user's.
    const Value& value(std::string_view key) const;
    const Origin& origin(std::string_view key) const;
    const std::string& text(std::string_view key) const;  // kText and kChoice
    std::int64_t integer(std::string_view key) const;
    double number(std::string_view key) const;
    bool boolean(std::string_view key) const;
    // True unless the value is the built-in default.
    bool is_set(std::string_view key) const { return origin(key).source != Source::kDefault; }

private:
    struct Effective {
        Value value;
        Origin origin;
    };
    const Effective& at(std::string_view key) const;

    const Registry* registry_;
    std::map<std::string, Effective, std::less<>> values_;
};

}  // namespace glassbox::config
