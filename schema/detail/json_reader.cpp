// Internal: typed field reads with JSON-path error messages.
#include "schema/detail/json_reader.hpp"

namespace glassbox::schema::detail {

std::string field_path(std::string_view base, std::string_view key) {
    std::string p(base);
    if (!p.empty()) p += '.';
    p += key;
    return p;
}

std::string index_path(std::string_view base, std::size_t index) {
    std::string p(base);
    p += '[';
    p += std::to_string(index);
    p += ']';
    return p;
}

base::Error decode_error(std::string_view path, std::string_view what) {
    std::string message(path.empty() ? std::string_view("$") : path);
    message += ": ";
    message += what;
    return base::make_error(base::ErrorType::kDecodeError, std::move(message));
}

base::Error type_error(std::string_view path, std::string_view expected, const json& got) {
    std::string what = "expected ";
    what += expected;
    what += ", got ";
    what += got.type_name();
    return decode_error(path, what);
}

ObjectReader::ObjectReader(const json& value, std::string path) : path_(std::move(path)) {
    if (value.is_object()) {
        object_ = &value;
    } else {
        fail(type_error(path_, "object", value));
    }
}

const json* ObjectReader::find(std::string_view key) const {
    if (error_ || !object_) return nullptr;
    const auto it = object_->find(key);
    if (it == object_->end() || it->is_null()) return nullptr;
    return &*it;
}

const json* ObjectReader::require(std::string_view key) {
    if (error_ || !object_) return nullptr;
    const json* v = find(key);
    if (!v) fail(decode_error(field_path(path_, key), "missing"));
    return v;
}

const std::string* ObjectReader::string_at(std::string_view key) {
    const json* v = find(key);
    if (!v) return nullptr;
    if (!v->is_string()) {
        fail(type_error(field_path(path_, key), "string", *v));
        return nullptr;
    }
    return &v->get_ref<const std::string&>();
}

void ObjectReader::read(std::string_view key, std::string& out) {
    if (const std::string* s = string_at(key)) out = *s;
}

void ObjectReader::read(std::string_view key, std::optional<std::string>& out) {
    if (const std::string* s = string_at(key)) out = *s;
}

void ObjectReader::read(std::string_view key, bool& out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_boolean()) {
        fail(type_error(field_path(path_, key), "boolean", *v));
        return;
    }
    out = v->get<bool>();
}

void ObjectReader::read(std::string_view key, double& out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number()) {
        fail(type_error(field_path(path_, key), "number", *v));
        return;
    }
    out = v->get<double>();
}

void ObjectReader::read(std::string_view key, std::vector<std::string>& out) {
    read_array(key, out, [](const json& e, const std::string& path) -> base::Result<std::string> {
        if (!e.is_string()) return type_error(path, "string", e);
        return e.get<std::string>();
    });
}

void ObjectReader::read(std::string_view key, std::map<std::string, std::string>& out) {
    const json* v = find(key);
    if (!v) return;
    const auto p = field_path(path_, key);
    if (!v->is_object()) {
        fail(type_error(p, "object", *v));
        return;
    }
    std::map<std::string, std::string> items;
    for (const auto& [k, e] : v->items()) {
        if (!e.is_string()) {
            fail(type_error(field_path(p, k), "string", e));
            return;
        }
        items.emplace(k, e.get<std::string>());
    }
    out = std::move(items);
}

}  // namespace glassbox::schema::detail
