// Internal: what the message codecs share — the enums' spellings, the codecs of values with a
// form of their own (enums, errors, raw JSON, tier counts), and the one-line definition of a
// field-list message's encode and decode.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "schema/detail/field_codec.hpp"
#include "schema/messages.hpp"

namespace glassbox::schema::detail {

template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};

inline constexpr auto kQueryModes = std::to_array<EnumName<QueryMode>>({
    {QueryMode::kAuto, "auto"},
    {QueryMode::kGraphRag, "graph-rag"},
    {QueryMode::kDocumentRag, "document-rag"},
    {QueryMode::kAgent, "agent"},
});
inline constexpr auto kRagTypes = std::to_array<EnumName<RagMessageType>>({
    {RagMessageType::kChunk, "chunk"},
    {RagMessageType::kExplain, "explain"},
    {RagMessageType::kError, "error"},
});
inline constexpr auto kAgentTypes = std::to_array<EnumName<AgentMessageType>>({
    {AgentMessageType::kThought, "thought"},
    {AgentMessageType::kObservation, "observation"},
    {AgentMessageType::kAnswer, "answer"},
    {AgentMessageType::kExplain, "explain"},
    {AgentMessageType::kError, "error"},
});
inline constexpr auto kTraceStatuses = std::to_array<EnumName<TraceStatus>>({
    {TraceStatus::kNone, ""},
    {TraceStatus::kComplete, "complete"},
    {TraceStatus::kError, "error"},
    {TraceStatus::kIncomplete, "incomplete"},
});

template <typename E, std::size_t N>
std::string_view enum_name(const std::array<EnumName<E>, N>& table, E value) {
    for (const auto& e : table) {
        if (e.value == value) return e.name;
    }
    return table.front().name;
}

template <typename E, std::size_t N>
std::optional<E> enum_value(const std::array<EnumName<E>, N>& table, std::string_view name) {
    for (const auto& e : table) {
        if (e.name == name) return e.value;
    }
    return std::nullopt;
}

// An enum spelled as a string; an unknown spelling is a decode error listing the known ones.
template <typename E, std::size_t N, const std::array<EnumName<E>, N>& kTable>
struct EnumCodec {
    static base::Result<E> decode(const json& v, const std::string& path) {
        if (!v.is_string()) return type_error(path, "string", v);
        const auto& name = v.get_ref<const std::string&>();
        if (auto e = enum_value(kTable, name)) return *e;
        std::string allowed;
        for (const auto& entry : kTable) {
            if (entry.name.empty()) continue;
            if (!allowed.empty()) allowed += "|";
            allowed += entry.name;
        }
        return decode_error(path, "unknown value \"" + name + "\" (expected " + allowed + ")");
    }
    static json encode(E value) { return std::string(enum_name(kTable, value)); }
};

template <>
struct ValueCodec<QueryMode> : EnumCodec<QueryMode, kQueryModes.size(), kQueryModes> {};
template <>
struct ValueCodec<RagMessageType> : EnumCodec<RagMessageType, kRagTypes.size(), kRagTypes> {};
template <>
struct ValueCodec<AgentMessageType> : EnumCodec<AgentMessageType, kAgentTypes.size(), kAgentTypes> {
};
template <>
struct ValueCodec<TraceStatus> : EnumCodec<TraceStatus, kTraceStatuses.size(), kTraceStatuses> {};

// {"type": "<ErrorType>", "message": "..."}; an unknown type is a decode error. On the optional:
// Result<Error> cannot exist (its two constructors would clash).
template <>
struct ValueCodec<std::optional<base::Error>> {
    static base::Result<std::optional<base::Error>> decode(const json& v, const std::string& path);
    static json encode(const std::optional<base::Error>& e);
};

// Any JSON value, kept as it came (LlmResponse::json).
template <>
struct ValueCodec<json> {
    static base::Result<json> decode(const json& v, const std::string&) { return v; }
    static json encode(const json& v) { return v; }
};

// Counts by name (StoreStats::facts_per_tier): an object of non-negative integers.
template <>
struct ValueCodec<std::map<std::string, std::uint64_t>> {
    static base::Result<std::map<std::string, std::uint64_t>> decode(const json& v,
                                                                     const std::string& path) {
        if (!v.is_object()) return type_error(path, "object", v);
        std::map<std::string, std::uint64_t> out;
        for (const auto& [key, value] : v.items()) {
            if (!value.is_number_unsigned())
                return type_error(field_path(path, key), "non-negative integer", value);
            out[key] = value.get<std::uint64_t>();
        }
        return out;
    }
    static json encode(const std::map<std::string, std::uint64_t>& counts) { return counts; }
};

}  // namespace glassbox::schema::detail

// encode(const T&) and decode<T> of a message whose FieldList is defined above it.
#define GLASSBOX_FIELD_LIST_CODEC(T)                                                    \
    nlohmann::json encode(const T& m) { return detail::encode_fields(m); }              \
    template <>                                                                         \
    base::Result<T> decode<T>(const nlohmann::json& value) {                            \
        return detail::guarded<T>([&] { return detail::decode_fields<T>(value, ""); }); \
    }
