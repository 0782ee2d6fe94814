// The JSON Schema subset: one recursive walk, the first violation reported with its JSON path.
#include "workers/llm/json_schema.hpp"

#include <array>
#include <string_view>

#include <nlohmann/json.hpp>

namespace glassbox::llm {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 7> kTypeNames{"object",  "array",   "string", "number",
                                                     "integer", "boolean", "null"};

// The JSON path of member `name` of the value at `path`.
std::string member_path(const std::string& path, const std::string& name) {
    std::string member = path;
    member.append(".").append(name);
    return member;
}

bool has_type(const json& value, std::string_view type) {
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "number") return value.is_number();
    if (type == "integer") {
        if (value.is_number_integer()) return true;
        // 2.0 is an integer in JSON Schema (the value, not the spelling, counts).
        if (value.is_number_float()) {
            const double d = value.get<double>();
            return d == static_cast<double>(static_cast<long long>(d));
        }
        return false;
    }
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    return false;
}

std::string kind_of(const json& value) {
    if (value.is_number_integer()) return "integer";
    if (value.is_number()) return "number";
    return value.type_name();
}

// A value for a message: short, so a huge answer does not end up in an error.
std::string shown(const json& value) {
    std::string text = value.dump();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

// Where a value sits, as a chain up to the root ("$"), written out only for an error: the walk
// visits every item of a template variable, and most values are valid.
struct Path {
    const Path* parent = nullptr;
    std::string_view member;  // set for a member of an object
    std::size_t index = 0;    // else the index in an array (the root has no parent)

    std::string text() const {
        if (parent == nullptr) return "$";
        std::string out = parent->text();
        if (index == kMember) return member_path(out, std::string(member));
        return out.append("[").append(std::to_string(index)).append("]");
    }
    static constexpr std::size_t kMember = static_cast<std::size_t>(-1);
};

// The type names of a schema's "type" joined by " or ", for the message.
std::string wanted_types(const json& type) {
    if (type.is_string()) return type.get<std::string>();
    std::string wanted;
    for (const json& t : type) {
        if (t.is_string()) wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
    }
    return wanted;
}

// The keywords of one schema object, found in one pass over its members: an array's "items"
// schema is read once for all its items, not once per item and keyword.
struct Keywords {
    explicit Keywords(const json& schema) {
        if (!schema.is_object()) return;
        object = true;
        for (auto it = schema.begin(); it != schema.end(); ++it) {
            const std::string& key = it.key();
            const json* value = &it.value();
            if (key == "type") {
                type = value;
            } else if (key == "enum") {
                values = value;
            } else if (key == "minimum") {
                minimum = value;
            } else if (key == "maximum") {
                maximum = value;
            } else if (key == "required") {
                required = value;
            } else if (key == "properties") {
                properties = value;
            } else if (key == "minItems") {
                min_items = value;
            } else if (key == "maxItems") {
                max_items = value;
            } else if (key == "items") {
                items = value;
            }
        }
    }

    bool object = false;  // a schema that is not an object constrains nothing
    const json* type = nullptr;
    const json* values = nullptr;  // "enum"
    const json* minimum = nullptr;
    const json* maximum = nullptr;
    const json* required = nullptr;
    const json* properties = nullptr;
    const json* min_items = nullptr;
    const json* max_items = nullptr;
    const json* items = nullptr;
};

std::optional<std::string> walk(const json& value, const Keywords& schema, const Path& path);

// "type" and "enum".
std::optional<std::string> check_kind(const json& value, const Keywords& schema, const Path& path) {
    if (const json* type = schema.type) {
        bool ok = false;
        if (type->is_string()) {
            ok = has_type(value, type->get_ref<const std::string&>());
        } else if (type->is_array()) {
            for (const json& t : *type) {
                if (t.is_string()) ok = ok || has_type(value, t.get_ref<const std::string&>());
            }
        }
        if (!ok)
            return path.text() + ": expected " +
                   (type->is_string() || type->is_array() ? wanted_types(*type) : std::string()) +
                   ", got " + kind_of(value);
    }
    if (const json* values = schema.values; values && values->is_array()) {
        bool found = false;
        for (const json& v : *values) found = found || v == value;
        if (!found) return path.text() + ": " + shown(value) + " is not one of " + shown(*values);
    }
    return std::nullopt;
}

// "minimum" and "maximum" of a number.
std::optional<std::string> check_number(const json& value, const Keywords& schema,
                                        const Path& path) {
    const double v = value.get<double>();
    if (const json* min = schema.minimum; min && min->is_number()) {
        if (v < min->get<double>())
            return path.text() + ": " + shown(value) + " is below the minimum " + min->dump();
    }
    if (const json* max = schema.maximum; max && max->is_number()) {
        if (v > max->get<double>())
            return path.text() + ": " + shown(value) + " is above the maximum " + max->dump();
    }
    return std::nullopt;
}

// "required" and "properties" of an object.
std::optional<std::string> check_object(const json& value, const Keywords& schema,
                                        const Path& path) {
    if (const json* required = schema.required; required && required->is_array()) {
        for (const json& name : *required) {
            if (name.is_string() && !value.contains(name.get_ref<const std::string&>()))
                return path.text() + ": missing required property \"" + name.get<std::string>() +
                       "\"";
        }
    }
    if (const json* properties = schema.properties; properties && properties->is_object()) {
        for (auto sub = properties->begin(); sub != properties->end(); ++sub) {
            const auto it = value.find(sub.key());
            if (it == value.end()) continue;
            if (auto error =
                    walk(*it, Keywords(sub.value()), Path{&path, sub.key(), Path::kMember}))
                return error;
        }
    }
    return std::nullopt;
}

// "minItems", "maxItems" and "items" of an array.
std::optional<std::string> check_array(const json& value, const Keywords& schema,
                                       const Path& path) {
    if (const json* min = schema.min_items; min && min->is_number()) {
        if (static_cast<double>(value.size()) < min->get<double>())
            return path.text() + ": " + std::to_string(value.size()) +
                   " items, fewer than minItems " + min->dump();
    }
    if (const json* max = schema.max_items; max && max->is_number()) {
        if (static_cast<double>(value.size()) > max->get<double>())
            return path.text() + ": " + std::to_string(value.size()) +
                   " items, more than maxItems " + max->dump();
    }
    if (schema.items) {
        const Keywords items(*schema.items);
        for (std::size_t i = 0; i < value.size(); ++i) {
            if (auto error = walk(value[i], items, Path{&path, {}, i})) return error;
        }
    }
    return std::nullopt;
}

std::optional<std::string> walk(const json& value, const Keywords& schema, const Path& path) {
    if (!schema.object) return std::nullopt;
    if (auto error = check_kind(value, schema, path)) return error;
    if (value.is_number()) {
        if (auto error = check_number(value, schema, path)) return error;
    }
    if (value.is_object()) {
        if (auto error = check_object(value, schema, path)) return error;
    }
    if (value.is_array()) return check_array(value, schema, path);
    return std::nullopt;
}

std::optional<std::string> check(const json& schema, const std::string& path) {
    if (!schema.is_object()) return path + ": a schema must be a JSON object";
    for (const auto& [key, value] : schema.items()) {
        const std::string where = member_path(path, key);
        if (key == "type") {
            const auto known = [](const json& t) {
                if (!t.is_string()) return false;
                for (auto name : kTypeNames)
                    if (t.get<std::string>() == name) return true;
                return false;
            };
            if (value.is_array()) {
                if (value.empty()) return where + ": an empty list of types";
                for (const json& t : value)
                    if (!known(t)) return where + ": unknown type " + t.dump();
            } else if (!known(value)) {
                return where + ": unknown type " + value.dump();
            }
        } else if (key == "required") {
            if (!value.is_array()) return where + ": must be an array of property names";
            for (const json& name : value)
                if (!name.is_string()) return where + ": must be an array of property names";
        } else if (key == "properties") {
            if (!value.is_object()) return where + ": must be an object of schemas";
            for (const auto& [name, sub] : value.items())
                if (auto error = check(sub, member_path(where, name))) return error;
        } else if (key == "items") {
            if (auto error = check(value, where)) return error;
        } else if (key == "enum") {
            if (!value.is_array()) return where + ": must be an array";
        } else if (key == "minimum" || key == "maximum") {
            if (!value.is_number()) return where + ": must be a number";
        } else if (key == "minItems" || key == "maxItems") {
            if (!value.is_number_unsigned() &&
                !(value.is_number_integer() && value.get<long long>() >= 0))
                return where + ": must be a non-negative integer";
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> validate_json(const json& value, const json& schema) {
    return walk(value, Keywords(schema), Path{});
}

std::optional<std::string> check_schema(const json& schema) { return check(schema, "$"); }

}  // namespace glassbox::llm
