// Internal: JSON codecs driven by one field list per struct, so a message's fields are written
// down once and the encoder and decoder cannot drift apart.
//
// A struct opts in with a specialisation of FieldList naming each member with its JSON key:
//
//   template <> struct FieldList<ChunkMatch> {
//       static constexpr auto value = std::tuple{field("chunk_id", &ChunkMatch::chunk_id),
//                                                field("score", &ChunkMatch::score)};
//   };
//
// encode_fields writes every field (std::optional ones only when set, or as null when the field
// is `nullable`); decode_fields follows the codec rules of schema/messages.hpp: unknown keys
// ignored, missing or null keys leave the default, a wrong type is a DecodeError naming its path.
#pragma once

#include <concepts>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "schema/detail/json_reader.hpp"
#include "schema/explain_uris.hpp"
#include "schema/term.hpp"
#include "schema/term_json.hpp"

namespace glassbox::schema::detail {

enum class Presence {
    kOptional,  // missing or null: the member keeps its default
    kRequired,  // missing or null: DecodeError "<path>: missing"
    kNullable,  // as kOptional; an empty std::optional is written as null instead of left out
};

template <typename S, typename M>
struct Field {
    std::string_view key;
    M S::*member;
    Presence presence = Presence::kOptional;
    bool iri = false;  // a string that enters a trace as an IRI: explain::iri_problem() checks it
};

template <typename S, typename M>
constexpr Field<S, M> field(std::string_view key, M S::*member) {
    return {key, member, Presence::kOptional};
}
template <typename S, typename M>
constexpr Field<S, M> required(std::string_view key, M S::*member) {
    return {key, member, Presence::kRequired};
}
template <typename S, typename M>
constexpr Field<S, M> nullable(std::string_view key, M S::*member) {
    return {key, member, Presence::kNullable};
}
// An optional string that, when given and not empty, must be an IRI fit for a trace (absolute,
// none of the characters N-Triples forbids): a request's parent_uri.
template <typename S>
constexpr Field<S, std::optional<std::string>> iri_field(std::string_view key,
                                                         std::optional<std::string> S::*member) {
    return {key, member, Presence::kOptional, true};
}

// Specialised, next to its codec, for every struct with a field list.
template <typename S>
struct FieldList;

// Specialised for a value with its own JSON form (an enum spelled as a string, an error text):
//   static base::Result<T> decode(const json& value, const std::string& path);
//   static json encode(const T& value);
template <typename T>
struct ValueCodec;

template <typename T>
concept HasValueCodec = requires {
    &ValueCodec<T>::decode;
};

template <typename S>
concept HasFieldList = requires {
    FieldList<S>::value;
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
struct IsStringMap : std::false_type {};
template <typename V>
struct IsStringMap<std::map<std::string, V>> : std::true_type {};

template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// Types ObjectReader::read handles itself (with the project's error messages).
template <typename T>
concept ReaderScalar =
    std::same_as<T, std::string> || std::same_as<T, std::optional<std::string>> ||
    std::same_as<T, bool> || std::same_as<T, double> || std::same_as<T, std::vector<std::string>> ||
    std::same_as<T, std::map<std::string, std::string>> || std::integral<T>;

template <HasFieldList S>
base::Result<S> decode_fields(const json& value, const std::string& path);
template <HasFieldList S>
json encode_fields(const S& value);

// A decoder's body run so that nothing escapes it: only allocation failures can throw, every
// access being checked first.
template <typename T, typename F>
base::Result<T> guarded(F&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        return base::make_error(base::ErrorType::kDecodeError, std::string("$: ") + e.what());
    }
}

// ---- decoding -------------------------------------------------------------------------------

// One value (not a field): a list element or the payload of an optional.
template <typename T>
base::Result<T> value_at(const json& v, const std::string& path) {
    if constexpr (HasValueCodec<T>) {
        return ValueCodec<T>::decode(v, path);
    } else if constexpr (HasFieldList<T>) {
        return decode_fields<T>(v, path);
    } else if constexpr (std::same_as<T, Term>) {
        return decode_term(v, path);
    } else if constexpr (std::same_as<T, Triple>) {
        return decode_triple(v, path);
    } else if constexpr (std::same_as<T, std::string>) {
        if (!v.is_string()) return type_error(path, "string", v);
        return v.get<std::string>();
    } else if constexpr (std::same_as<T, double>) {
        if (!v.is_number()) return type_error(path, "number", v);
        return v.get<double>();
    } else if constexpr (std::integral<T> && !std::same_as<T, bool>) {
        return integer_at<T>(v, path);
    } else if constexpr (IsStringMap<T>::value) {
        if (!v.is_object()) return type_error(path, "object", v);
        T out;
        for (const auto& [key, element] : v.items()) {
            auto decoded = value_at<typename T::mapped_type>(element, field_path(path, key));
            if (!decoded.ok()) return std::move(decoded).error();
            out.emplace(key, std::move(decoded).value());
        }
        return out;
    } else if constexpr (IsVector<T>::value) {
        using E = typename T::value_type;
        if (!v.is_array()) return type_error(path, "array", v);
        T out;
        out.reserve(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
            auto element = value_at<E>(v[i], index_path(path, i));
            if (!element.ok()) return std::move(element).error();
            out.push_back(std::move(element).value());
        }
        return out;
    } else {
        static_assert(sizeof(T) == 0, "value_at: no decoder for this type");
    }
}

// One field of an object. Integers and the other reader scalars keep ObjectReader's messages.
template <typename M>
void read_value(ObjectReader& r, std::string_view key, M& out) {
    if constexpr (HasValueCodec<M>) {
        r.read_with(key, out, ValueCodec<M>::decode);
    } else if constexpr (ReaderScalar<M>) {
        r.read(key, out);
    } else if constexpr (IsOptional<M>::value) {
        using V = typename M::value_type;
        if (!r.find(key)) return;
        V value{};
        read_value(r, key, value);
        if (r.ok()) out = std::move(value);
    } else if constexpr (IsVector<M>::value) {
        r.read_array(key, out, value_at<typename M::value_type>);
    } else {
        r.read_with(key, out, value_at<M>);
    }
}

template <typename S, typename M>
void read_field(ObjectReader& r, const Field<S, M>& f, S& object) {
    if (f.presence == Presence::kRequired && !r.require(f.key)) return;
    read_value(r, f.key, object.*f.member);
    if constexpr (std::same_as<M, std::optional<std::string>>) {
        const auto& value = object.*f.member;
        if (f.iri && r.ok() && value && !value->empty()) {
            if (auto why = explain::iri_problem(*value))
                r.fail(decode_error(field_path(r.path(), f.key), "not a valid IRI: " + *why));
        }
    }
}

template <HasFieldList S>
base::Result<S> decode_fields(const json& value, const std::string& path) {
    ObjectReader r(value, path);
    S object{};
    std::apply([&](const auto&... f) { (read_field(r, f, object), ...); }, FieldList<S>::value);
    if (!r.ok()) return r.error();
    return object;
}

// ---- encoding -------------------------------------------------------------------------------

template <typename T>
json value_json(const T& v) {
    if constexpr (HasValueCodec<T>) {
        return ValueCodec<T>::encode(v);
    } else if constexpr (HasFieldList<T>) {
        return encode_fields(v);
    } else if constexpr (std::same_as<T, Term> || std::same_as<T, Triple>) {
        return encode(v);
    } else if constexpr (IsVector<T>::value) {
        // Lists of strings and numbers convert directly; lists of structs, terms, lists element
        // by element.
        if constexpr (std::same_as<typename T::value_type, std::string> ||
                      std::is_arithmetic_v<typename T::value_type>) {
            return json(v);
        } else {
            json a = json::array();
            for (const auto& element : v) a.push_back(value_json(element));
            return a;
        }
    } else {
        return json(v);
    }
}

template <typename S, typename M>
void write_field(json& out, const Field<S, M>& f, const S& object) {
    const M& v = object.*f.member;
    if constexpr (IsOptional<M>::value) {
        if (v) {
            // An optional with a codec of its own (std::optional<base::Error>) encodes itself.
            if constexpr (HasValueCodec<M>) {
                out[std::string(f.key)] = ValueCodec<M>::encode(v);
            } else {
                out[std::string(f.key)] = value_json(*v);
            }
        } else if (f.presence == Presence::kNullable) {
            out[std::string(f.key)] = nullptr;
        }
    } else {
        out[std::string(f.key)] = value_json(v);
    }
}

template <HasFieldList S>
json encode_fields(const S& value) {
    json out = json::object();
    std::apply([&](const auto&... f) { (write_field(out, f, value), ...); }, FieldList<S>::value);
    return out;
}

}  // namespace glassbox::schema::detail
