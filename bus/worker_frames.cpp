// Decoders of the MDPW01/GBW01 frames and the GBW01 meta codec (docs/protocol.md §5).
#include "bus/worker_frames.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "schema/json_cursor.hpp"
#include "schema/json_fast.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::bus {

namespace proto = schema::protocol;
using base::Error;
using base::ErrorType;
using base::Result;

Result<char> decode_worker_command(const FrameViews& frames) {
    return decode_command_head(frames, proto::kMdpWorker);
}

Result<WorkerReady> decode_worker_ready(const FrameViews& frames) {
    WorkerReady ready;
    ready.service = frames.size() >= 4 ? frames[3] : std::string_view{};
    if (frames.size() < 4 || frames.size() > 6 || !proto::is_valid_service_name(ready.service) ||
        ready.service.starts_with(proto::kMmiPrefix)) {
        return frame_error("bad service or frame count");
    }
    const bool classic = frames.size() >= 5 && frames[4] == proto::kGbWorkerCapability;
    const bool packed = frames.size() >= 5 && frames[4] == kGbWorkerPackedCapability;
    const bool compact = packed || (frames.size() >= 5 && frames[4] == kGbWorkerCompactCapability);
    ready.gbw01 = classic || compact;
    ready.layout = compact ? WorkerLayout::kCompact : WorkerLayout::kClassic;
    ready.packed = packed;
    if (frames.size() == 6) {
        const auto declared = proto::parse_ascii_int(frames[5]);
        if (!ready.gbw01) return frame_error("credit frame without GBW01, GBW02 or GBW03");
        if (!declared || *declared < 1 || *declared > proto::kMaxWorkerCredit) {
            return frame_error("credit is not an ascii-int in 1-1024");
        }
        ready.credit = *declared;
    }
    return ready;
}

Result<std::string_view> decode_worker_token(const FrameViews& frames, WorkerLayout layout) {
    if (layout == WorkerLayout::kCompact) {
        if (frames.size() < worker_payload_frame(layout)) {
            return frame_error("worker message without a token");
        }
    } else if (frames.size() < kWorkerPayloadFrame || !frames[4].empty()) {
        return frame_error("worker message without token and empty frame");
    }
    return frames[kWorkerTokenFrame];
}

Result<std::string_view> decode_worker_partial(const FrameViews& frames, WorkerLayout layout) {
    const std::size_t body = worker_payload_frame(layout);
    if (frames.size() != body + 1) return frame_error("PARTIAL needs one body frame");
    return frames[body];
}

Result<WorkerExplain> decode_worker_explain(const FrameViews& frames, std::size_t max_session,
                                            WorkerLayout layout) {
    const std::size_t first = worker_payload_frame(layout);
    if (frames.size() != first + 4) {
        return frame_error("EXPLAIN needs session, seq, state and body frames");
    }
    WorkerExplain explain;
    explain.session = frames[first];
    const auto seq = proto::parse_ascii_int(frames[first + 1]);
    explain.state = frames[first + 2];
    explain.body = first + 3;
    if (explain.session.empty() || explain.session.size() > max_session || !seq ||
        (explain.state != proto::kStateOpen && explain.state != proto::kStateComplete &&
         explain.state != proto::kStateError)) {
        return frame_error("malformed EXPLAIN (session, seq or state)");
    }
    explain.seq = *seq;
    return explain;
}

Error decode_worker_error(const FrameViews& frames, WorkerLayout layout) {
    const std::size_t first = worker_payload_frame(layout);
    const bool has_type = frames.size() > first;
    const auto type = has_type ? base::error_type_from_string(frames[first]) : std::nullopt;
    Error error;
    error.type = type.value_or(ErrorType::kInternal);
    error.message = frames.size() > first + 1 ? std::string{frames[first + 1]} : std::string{};
    if (!type && has_type) {
        error.message =
            "worker sent error type '" + printable(frames[first]) + "': " + error.message;
    }
    return error;
}

std::optional<std::string_view> worker_token_of(const FrameViews& frames) {
    if (frames.size() <= kWorkerTokenFrame || frames[3].empty() ||
        frames[3].size() > proto::kMaxToken) {
        return std::nullopt;
    }
    return frames[kWorkerTokenFrame];
}

Result<WorkerRequest> decode_gbw_request(const FrameViews& frames) {
    const auto token = worker_token_of(frames);
    if (!token) return frame_error("REQUEST without a valid token (1-64 bytes)");
    if (frames.size() == 7 && frames[4].empty()) {
        return WorkerRequest{*token, frames[5], frames[6], WorkerLayout::kClassic};
    }
    if (frames.size() == 6 && !frames[4].empty()) {
        return WorkerRequest{*token, frames[4], frames[5], WorkerLayout::kCompact};
    }
    return frame_error(
        "REQUEST must be [token] [empty] [meta] [body] (GBW01) or [token] [meta] "
        "[body] (GBW02)");
}

Result<std::string_view> decode_worker_cancel(const FrameViews& frames) {
    if (frames.size() != 4) return frame_error("CANCEL must be [token]");
    return frames[kWorkerTokenFrame];
}

namespace {

// Decimal digits of `value`, without std::to_string's temporary.
void append_decimal(std::string& out, std::uint64_t value) {
    char digits[20];
    std::size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    while (n > 0) out.push_back(digits[--n]);
}

// A JSON string: short plain ASCII (service names, most request ids, the client word) is copied
// as it is; anything that needs escaping or a UTF-8 check goes to the general writer.
void append_json_text(std::string& out, std::string_view text) {
    const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
        return c >= 0x20 && c <= 0x7E && c != '"' && c != '\\';
    });
    if (!plain) {
        schema::append_json_string(out, text);
        return;
    }
    out.push_back('"');
    out.append(text);
    out.push_back('"');
}

}  // namespace

void encode_request_meta(std::string& meta, std::string_view request_id, std::string_view service,
                         std::uint64_t deadline_ms, std::uint64_t attempt, std::string_view client,
                         std::string_view explain, std::string_view trace) {
    using namespace std::string_view_literals;
    meta.clear();
    meta.reserve(80 + request_id.size() + service.size());
    meta.append("{\"request_id\":"sv);
    append_json_text(meta, request_id);
    meta.append(",\"service\":"sv);
    append_json_text(meta, service);
    meta.append(",\"deadline_ms\":"sv);
    append_decimal(meta, deadline_ms);
    meta.append(",\"attempt\":"sv);
    append_decimal(meta, attempt);
    if (!client.empty()) {
        meta.append(",\"client\":"sv);
        append_json_text(meta, client);
    }
    if (!explain.empty()) {
        meta.append(",\"explain\":"sv);
        append_json_text(meta, explain);
    }
    if (!trace.empty()) {
        meta.append(",\"trace\":"sv);
        append_json_text(meta, trace);
    }
    meta.push_back('}');
}

std::string encode_request_meta(std::string_view request_id, std::string_view service,
                                std::uint64_t deadline_ms, std::uint64_t attempt,
                                std::string_view client, std::string_view explain,
                                std::string_view trace) {
    std::string meta;
    encode_request_meta(meta, request_id, service, deadline_ms, attempt, client, explain, trace);
    return meta;
}

namespace {

bool is_unsigned_integer(const nlohmann::json& value) {
    return value.is_number_unsigned() ||
           (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

// The meta frame read without a tree, in one pass: what encode_request_meta writes (keys in any
// order, unknown keys skipped). False for anything else — a type mismatch, a duplicate or
// escaped key, a number that is not an unsigned integer, text past the object — which the tree
// decoder then reads, giving the result or the error (so both agree on every input).
bool decode_request_meta_fast(std::string_view text, RequestMetaFrame& out) {
    schema::JsonCursor cursor(text);
    schema::JsonKeys keys;
    constexpr unsigned kRequestId = 1;
    constexpr unsigned kService = 2;
    constexpr unsigned kDeadline = 4;
    constexpr unsigned kAttempt = 8;
    constexpr unsigned kClient = 16;
    constexpr unsigned kExplain = 32;
    constexpr unsigned kTrace = 64;
    const bool read = cursor.object([&](std::string_view key) {
        if (key == "request_id") return keys.first(kRequestId) && cursor.string(out.request_id);
        if (key == "service") return keys.first(kService) && cursor.string(out.service);
        if (key == "deadline_ms") return keys.first(kDeadline) && cursor.uint(out.deadline_ms);
        if (key == "attempt") return keys.first(kAttempt) && cursor.uint(out.attempt);
        if (key == "client") return keys.first(kClient) && cursor.string(out.client);
        if (key == "explain") return keys.first(kExplain) && cursor.string(out.explain);
        if (key == "trace") return keys.first(kTrace) && cursor.string(out.trace);
        return cursor.skip();
    });
    constexpr unsigned kRequired = kRequestId | kService | kDeadline | kAttempt;
    return read && cursor.at_end() && (keys.seen() & kRequired) == kRequired;
}

}  // namespace

Result<RequestMetaFrame> decode_request_meta(std::string_view text) {
    // Every request a worker receives carries one: a tree per request cost more than the rest of
    // the frame's decoding.
    if (RequestMetaFrame fast; decode_request_meta_fast(text, fast)) return fast;
    const auto parsed = schema::parse_untrusted_json(text);
    if (!parsed) return frame_error("request meta: " + parsed.error().message);
    const nlohmann::json& meta = *parsed;
    if (!meta.is_object()) return frame_error("request meta is not a JSON object");
    const auto field = [&meta](const char* key) -> const nlohmann::json* {
        const auto it = meta.find(key);
        return it == meta.end() ? nullptr : &*it;
    };
    const auto* request_id = field("request_id");
    const auto* service = field("service");
    const auto* deadline_ms = field("deadline_ms");
    const auto* attempt = field("attempt");
    const auto* client = field("client");
    const auto* explain = field("explain");
    const auto* trace = field("trace");
    if (request_id == nullptr || !request_id->is_string() || service == nullptr ||
        !service->is_string()) {
        return frame_error("request meta needs request_id and service strings");
    }
    if (deadline_ms == nullptr || !is_unsigned_integer(*deadline_ms) || attempt == nullptr ||
        !is_unsigned_integer(*attempt)) {
        return frame_error("request meta needs deadline_ms and attempt as non-negative integers");
    }
    if (client != nullptr && !client->is_string()) {
        return frame_error("request meta client is not a string");
    }
    if (explain != nullptr && !explain->is_string()) {
        return frame_error("request meta explain is not a string");
    }
    if (trace != nullptr && !trace->is_string()) {
        return frame_error("request meta trace is not a string");
    }
    RequestMetaFrame out;
    out.request_id = request_id->get<std::string>();
    out.service = service->get<std::string>();
    out.deadline_ms = deadline_ms->get<std::uint64_t>();
    out.attempt = attempt->get<std::uint64_t>();
    out.client = client != nullptr ? client->get<std::string>() : std::string{};
    out.explain = explain != nullptr ? explain->get<std::string>() : std::string{};
    out.trace = trace != nullptr ? trace->get<std::string>() : std::string{};
    return out;
}

}  // namespace glassbox::bus
