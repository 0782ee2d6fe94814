// Internal: reads fields of an untrusted JSON object into typed values, recording the first
// error with its JSON path ("explain_triples[3].o.tr.s: expected object, got string").
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::schema::detail {

using json = nlohmann::json;

// "a.b", "a[3]"; the root path is empty and is shown as "$".
std::string field_path(std::string_view base, std::string_view key);
std::string index_path(std::string_view base, std::size_t index);
base::Error decode_error(std::string_view path, std::string_view what);
base::Error type_error(std::string_view path, std::string_view expected, const json& got);

// An integer of type T at `path`: out of T's range or not an integer is a DecodeError.
template <std::integral T>
requires(!std::same_as<T, bool>) base::Result<T> integer_at(const json& v, std::string_view path) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
            return decode_error(path, "integer out of range");
        }
        return static_cast<T>(u);
    }
    if (!v.is_number_integer()) return type_error(path, "integer", v);
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
        if (i < 0) return decode_error(path, "expected a non-negative integer");
        if (static_cast<std::uint64_t>(i) >
            static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
            return decode_error(path, "integer out of range");
        }
    } else {
        if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            i > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
            return decode_error(path, "integer out of range");
        }
    }
    return static_cast<T>(i);
}

// Missing keys and JSON null leave the target unchanged (its default); unknown keys are
// never looked at. After the first error every further read is a no-op.
class ObjectReader {
public:
    ObjectReader(const json& value, std::string path);

    bool ok() const noexcept { return !error_.has_value(); }
    const base::Error& error() const { return *error_; }
    void fail(base::Error error) {
        if (!error_) error_ = std::move(error);
    }
    const std::string& path() const noexcept { return path_; }

    // The value at `key`, or nullptr when absent, null, or after an error.
    const json* find(std::string_view key) const;
    // As find, but a missing key is an error.
    const json* require(std::string_view key);

    // The string at `key`, or nullptr when absent, null or after an error; another type is an
    // error.
    const std::string* string_at(std::string_view key);

    void read(std::string_view key, std::string& out);
    void read(std::string_view key, std::optional<std::string>& out);
    void read(std::string_view key, bool& out);
    void read(std::string_view key, double& out);
    void read(std::string_view key, std::vector<std::string>& out);
    void read(std::string_view key, std::map<std::string, std::string>& out);

    template <std::integral T>
    requires(!std::same_as<T, bool>) void read(std::string_view key, T& out);

    // Reads an array at `key` element by element: decode(element, path) -> Result<E>.
    template <typename E, typename Decode>
    void read_array(std::string_view key, std::vector<E>& out, Decode&& decode) {
        const json* v = find(key);
        if (!v) return;
        const auto p = field_path(path_, key);
        if (!v->is_array()) {
            fail(type_error(p, "array", *v));
            return;
        }
        std::vector<E> items;
        items.reserve(v->size());
        for (std::size_t i = 0; i < v->size(); ++i) {
            auto item = decode((*v)[i], index_path(p, i));
            if (!item.ok()) {
                fail(std::move(item).error());
                return;
            }
            items.push_back(std::move(item).value());
        }
        out = std::move(items);
    }

    // Reads one nested value at `key`: decode(value, path) -> Result<T>.
    template <typename T, typename Decode>
    void read_with(std::string_view key, T& out, Decode&& decode) {
        const json* v = find(key);
        if (!v) return;
        auto item = decode(*v, field_path(path_, key));
        if (!item.ok()) {
            fail(std::move(item).error());
            return;
        }
        out = std::move(item).value();
    }

private:
    const json* object_ = nullptr;
    std::string path_;
    std::optional<base::Error> error_;
};

template <std::integral T>
requires(!std::same_as<T, bool>) void ObjectReader::read(std::string_view key, T& out) {
    const json* v = find(key);
    if (!v) return;
    auto value = integer_at<T>(*v, field_path(path_, key));
    if (!value.ok()) {
        fail(std::move(value).error());
        return;
    }
    out = value.value();
}

}  // namespace glassbox::schema::detail
