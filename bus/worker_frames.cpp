// Decoders of the MDPW01/GBW01 frames and the GBW01 meta codec (docs/protocol.md §5).
#include "bus/worker_frames.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "schema/json_fast.hpp"

namespace glassbox::bus {

namespace proto = schema::protocol;
using base::Error;
using base::ErrorType;
using base::Result;

Result<char> decode_worker_command(const FrameViews& frames) {
    if (frames.size() < 3 || !frames[0].empty() || frames[1] != proto::kMdpWorker ||
        frames[2].size() != 1) {
        return frame_error("MDPW01 message without a command");
    }
    return frames[2][0];
}

Result<WorkerReady> decode_worker_ready(const FrameViews& frames) {
    WorkerReady ready;
    ready.service = frames.size() >= 4 ? frames[3] : std::string_view{};
    if (frames.size() < 4 || frames.size() > 6 || !proto::is_valid_service_name(ready.service) ||
        ready.service.starts_with(proto::kMmiPrefix)) {
        return frame_error("bad service or frame count");
    }
    ready.gbw01 = frames.size() >= 5 && frames[4] == proto::kGbWorkerCapability;
    if (frames.size() == 6) {
        const auto declared = proto::parse_ascii_int(frames[5]);
        if (!ready.gbw01) return frame_error("credit frame without GBW01");
        if (!declared || *declared < 1 || *declared > proto::kMaxWorkerCredit) {
            return frame_error("credit is not an ascii-int in 1-1024");
        }
        ready.credit = *declared;
    }
    return ready;
}

Result<std::string_view> decode_worker_token(const FrameViews& frames) {
    if (frames.size() < kWorkerPayloadFrame || !frames[4].empty()) {
        return frame_error("worker message without token and empty frame");
    }
    return frames[kWorkerTokenFrame];
}

Result<std::string_view> decode_worker_partial(const FrameViews& frames) {
    if (frames.size() != kWorkerPayloadFrame + 1) return frame_error("PARTIAL needs one body frame");
    return frames[kWorkerPayloadFrame];
}

Result<WorkerExplain> decode_worker_explain(const FrameViews& frames, std::size_t max_session) {
    if (frames.size() != kWorkerPayloadFrame + 4) {
        return frame_error("EXPLAIN needs session, seq, state and body frames");
    }
    WorkerExplain explain;
    explain.session = frames[5];
    const auto seq = proto::parse_ascii_int(frames[6]);
    explain.state = frames[7];
    explain.body = 8;
    if (explain.session.empty() || explain.session.size() > max_session || !seq ||
        (explain.state != proto::kStateOpen && explain.state != proto::kStateComplete &&
         explain.state != proto::kStateError)) {
        return frame_error("malformed EXPLAIN (session, seq or state)");
    }
    explain.seq = *seq;
    return explain;
}

Error decode_worker_error(const FrameViews& frames) {
    const bool has_type = frames.size() > kWorkerPayloadFrame;
    const auto type = has_type ? base::error_type_from_string(frames[5]) : std::nullopt;
    Error error;
    error.type = type.value_or(ErrorType::kInternal);
    error.message = frames.size() > 6 ? std::string{frames[6]} : std::string{};
    if (!type && has_type) {
        error.message = "worker sent error type '" + printable(frames[5]) + "': " + error.message;
    }
    return error;
}

std::optional<std::string_view> worker_token_of(const FrameViews& frames) {
    if (frames.size() <= kWorkerTokenFrame || frames[3].empty() || frames[3].size() > proto::kMaxToken) {
        return std::nullopt;
    }
    return frames[kWorkerTokenFrame];
}

Result<WorkerRequest> decode_gbw_request(const FrameViews& frames) {
    const auto token = worker_token_of(frames);
    if (!token) return frame_error("REQUEST without a valid token (1-64 bytes)");
    if (frames.size() != 7 || !frames[4].empty()) {
        return frame_error("GBW01 REQUEST must be [token] [empty] [meta] [body]");
    }
    return WorkerRequest{*token, frames[5], frames[6]};
}

Result<std::string_view> decode_worker_cancel(const FrameViews& frames) {
    if (frames.size() != 4) return frame_error("CANCEL must be [token]");
    return frames[kWorkerTokenFrame];
}

std::string encode_request_meta(std::string_view request_id, std::string_view service,
                                std::uint64_t deadline_ms, std::uint64_t attempt,
                                std::string_view client) {
    std::string meta = "{\"request_id\":";
    schema::append_json_string(meta, request_id);
    meta += ",\"service\":";
    schema::append_json_string(meta, service);
    meta += ",\"deadline_ms\":";
    meta += std::to_string(deadline_ms);
    meta += ",\"attempt\":";
    meta += std::to_string(attempt);
    if (!client.empty()) {
        meta += ",\"client\":";
        schema::append_json_string(meta, client);
    }
    meta += '}';
    return meta;
}

namespace {

bool is_unsigned_integer(const nlohmann::json& value) {
    return value.is_number_unsigned() ||
           (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

}  // namespace

Result<RequestMetaFrame> decode_request_meta(std::string_view text) {
    const auto meta = nlohmann::json::parse(text, nullptr, false);
    if (meta.is_discarded() || !meta.is_object()) {
        return frame_error("request meta is not a JSON object");
    }
    const auto field = [&meta](const char* key) -> const nlohmann::json* {
        const auto it = meta.find(key);
        return it == meta.end() ? nullptr : &*it;
    };
    const auto* request_id = field("request_id");
    const auto* service = field("service");
    const auto* deadline_ms = field("deadline_ms");
    const auto* attempt = field("attempt");
    const auto* client = field("client");
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
    RequestMetaFrame out;
    out.request_id = request_id->get<std::string>();
    out.service = service->get<std::string>();
    out.deadline_ms = deadline_ms->get<std::uint64_t>();
    out.attempt = attempt->get<std::uint64_t>();
    out.client = client != nullptr ? client->get<std::string>() : std::string{};
    return out;
}

}  // namespace glassbox::bus
