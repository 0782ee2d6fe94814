// The trace collector's OpenTelemetry exporter thread, its counters and its configuration
// parsers (docs/operations.md, "OpenTelemetry").
#include "workers/trace_collector/otel_exporter.hpp"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/log.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

// OTLP/HTTP's retryable answers (OTLP specification, "Retryable Response Codes").
bool retryable_status(long status) {
    return status == 429 || status == 502 || status == 503 || status == 504;
}

// A varint of protobuf's wire format at `pos` of `s`; nullopt when cut short.
std::optional<std::uint64_t> read_varint(std::string_view s, std::size_t& pos) {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64 && pos < s.size(); shift += 7) {
        const auto byte = static_cast<unsigned char>(s[pos++]);
        value |= std::uint64_t{byte & 0x7fu} << shift;
        if ((byte & 0x80u) == 0) return value;
    }
    return std::nullopt;
}

// The length-delimited field `field` of message `s` (the last one, as protobuf merges), or
// nullopt; a varint field `field` goes to `number` instead.
struct ProtoField {
    std::optional<std::string_view> bytes;
    std::optional<std::uint64_t> number;
};

ProtoField proto_field(std::string_view s, std::uint64_t field) {
    ProtoField out;
    std::size_t pos = 0;
    while (pos < s.size()) {
        const auto key = read_varint(s, pos);
        if (!key) return out;
        const std::uint64_t wire = *key & 7u;
        if (wire == 0) {
            const auto v = read_varint(s, pos);
            if (!v) return out;
            if ((*key >> 3) == field) out.number = *v;
        } else if (wire == 2) {
            const auto len = read_varint(s, pos);
            if (!len || *len > s.size() - pos) return out;
            if ((*key >> 3) == field) out.bytes = s.substr(pos, *len);
            pos += *len;
        } else if (wire == 1 || wire == 5) {
            pos += wire == 1 ? 8 : 4;
        } else {
            return out;
        }
    }
    return out;
}

}  // namespace

Result<otel::Encoding> otel_encoding(std::string_view protocol) {
    if (protocol == "http/protobuf") return otel::Encoding::kProtobuf;
    if (protocol == "http/json") return otel::Encoding::kJson;
    return make_error(ErrorType::kInvalidRequest, "otel.protocol: \"" + std::string(protocol) +
                                                      "\" is not http/protobuf or http/json");
}

std::chrono::milliseconds otel_lease(const ExporterConfig& config) {
    return std::max(std::chrono::milliseconds{60'000}, 3 * config.timeout);
}

BatchEncoder otlp_batch_encoder(otel::Resource resource, otel::Encoding encoding) {
    return
        [resource = std::move(resource), encoding](
            TraceStore& store, const std::vector<std::string>& sessions) -> Result<EncodedBatch> {
            // A run pruned since it was queued is left out: its queue row went with it, or goes
            // now.
            auto read = store.otel_spans(sessions);
            if (!read) return read.error();
            const std::vector<otel::Span>& spans = *read;
            EncodedBatch out;
            out.spans = spans.size();
            if (!spans.empty()) out.body = otel::encode_export_request(spans, resource, encoding);
            return out;
        };
}

void OtelCounters::exported(std::size_t runs, std::size_t spans) {
    std::lock_guard lock(mutex_);
    counts_.exported_runs += runs;
    counts_.exported_spans += spans;
}

void OtelCounters::dropped_queue_full(std::int64_t runs) {
    if (runs <= 0) return;
    std::lock_guard lock(mutex_);
    counts_.dropped.queue_full += static_cast<std::uint64_t>(runs);
}

void OtelCounters::rejected(std::size_t runs, const std::string& error) {
    std::lock_guard lock(mutex_);
    counts_.dropped.rejected += runs;
    ++counts_.failures;
    counts_.last_error = error;
}

void OtelCounters::rejected_spans(std::int64_t spans, const std::string& error) {
    std::lock_guard lock(mutex_);
    counts_.dropped.rejected_spans += static_cast<std::uint64_t>(std::max<std::int64_t>(spans, 0));
    if (!error.empty()) counts_.last_error = error;
}

void OtelCounters::failed(const std::string& error) {
    std::lock_guard lock(mutex_);
    ++counts_.failures;
    counts_.last_error = error;
}

schema::TraceOtelStats OtelCounters::snapshot(std::int64_t pending) const {
    std::lock_guard lock(mutex_);
    schema::TraceOtelStats out = counts_;
    out.configured = configured_;
    out.endpoint = endpoint_;
    out.protocol = protocol_;
    out.pending = pending;
    return out;
}

namespace {

http::HttpOptions client_options(const ExporterConfig& config) {
    http::HttpOptions o;
    // The exporter retries across passes (the runs wait in the store), never inside one.
    o.max_retries = 0;
    o.timeout = config.timeout;
    o.connect_timeout = std::min(config.timeout, o.connect_timeout);
    return o;
}

}  // namespace

OtelExporter::OtelExporter(std::unique_ptr<TraceStore> store, BatchEncoder encode,
                           ExporterConfig config, std::shared_ptr<OtelCounters> counters)
    : store_(std::move(store)),
      encode_(std::move(encode)),
      config_(std::move(config)),
      counters_(std::move(counters)),
      client_(client_options(config_)) {}

OtelExporter::~OtelExporter() { stop(); }

void OtelExporter::start() {
    thread_.start(config_.interval, [this, named = false]() mutable {
        // Named so that its CPU can be told from ingest's in /proc (bench_cost --otel).
        if (!named) {
            (void)pthread_setname_np(pthread_self(), "otel-export");
            named = true;
        }
        return run_once();
    });
}

void OtelExporter::stop() { thread_.stop(); }

Result<ExportPass> OtelExporter::export_once(Clock::time_point now) {
    auto trimmed_runs = store_->otel_trim(config_.max_queue);
    if (!trimmed_runs) return trimmed_runs.error();
    counters_->dropped_queue_full(*trimmed_runs);
    if (retry_at_ && now < *retry_at_) return ExportPass{0, 0, true};
    auto items = store_->otel_claim(config_.batch, otel_lease(config_));
    if (!items) return items.error();
    if (items->empty()) return ExportPass{};
    return send(*items, now);
}

Result<ExportPass> OtelExporter::send(const std::vector<OtelItem>& items, Clock::time_point now) {
    std::vector<std::string> sessions;
    sessions.reserve(items.size());
    for (const OtelItem& item : items) sessions.push_back(item.session);
    auto batch = encode_(*store_, sessions);
    if (!batch) {
        (void)store_->otel_release_all(items);
        return batch.error();
    }
    ExportPass pass{items.size(), 0, false};
    if (batch->spans > 0) {
        http::HttpRequest request;
        request.method = "POST";
        request.url = config_.url;
        request.content_type = std::string(otel::content_type(config_.encoding));
        request.accept = request.content_type;
        request.body = std::move(batch->body);
        request.headers = config_.headers;
        request.http_errors_as_responses = true;
        http::CallOptions call;
        call.deadline = Clock::now() + config_.timeout;
        call.cancelled = [this] { return thread_.stopping(); };
        auto response = client_.request(request, call);
        if (!response) {
            // Not reached, timed out or cancelled: the runs wait for the next attempt.
            return failed(items, response.error().describe(), false, std::nullopt, now);
        }
        if (response->status < 200 || response->status > 299) {
            const std::string error = http::detail::describe_http_error(
                response->status, http::otel_public_url(config_.url), response->body);
            std::optional<std::chrono::milliseconds> wait;
            if (auto after = response->header("retry-after"))
                wait = http::detail::parse_retry_after(*after, std::chrono::system_clock::now());
            return failed(items, error, !retryable_status(response->status), wait, now);
        }
        const auto [rejected, message] =
            detail::otlp_partial_success(response->body, config_.encoding);
        if (rejected > 0 || !message.empty()) counters_->rejected_spans(rejected, message);
        pass.spans =
            batch->spans - std::min<std::size_t>(batch->spans, static_cast<std::size_t>(rejected));
    }
    if (auto done = store_->otel_done_all(items); !done) return done.error();
    counters_->exported(items.size(), pass.spans);
    retry_at_.reset();
    attempts_ = 0;
    return pass;
}

Result<ExportPass> OtelExporter::failed(const std::vector<OtelItem>& items,
                                        const std::string& error, bool refused,
                                        std::optional<std::chrono::milliseconds> wait,
                                        Clock::time_point now) {
    if (refused) {
        // OTLP: a 4xx other than 429 (and any other non-retryable answer) is not to be retried.
        counters_->rejected(items.size(), error);
        if (auto done = store_->otel_done_all(items); !done) return done.error();
        return ExportPass{items.size(), 0, false};
    }
    counters_->failed(error);
    if (auto r = store_->otel_release_all(items); !r) return r.error();
    if (!wait) {
        const int doublings = std::min(attempts_, 20);
        wait =
            std::min(config_.max_backoff, config_.initial_backoff * (std::int64_t{1} << doublings));
    }
    ++attempts_;
    retry_at_ = now + std::min(*wait, config_.max_retry_after);
    return make_error(ErrorType::kServiceUnavailable, error);
}

bool OtelExporter::run_once() {
    static const auto log = base::component_logger("otel-export");
    // No exception leaves the thread: a failure is counted and a later pass retries.
    try {
        auto pass = export_once();
        if (!pass) {
            if (!failing_) {
                log->warn("event=otel_export_failed error=\"{}\" action=retry_with_backoff",
                          pass.error().describe());
            }
            failing_ = true;
            return false;
        }
        if (pass->waiting) return false;
        if (failing_ && pass->runs > 0) log->info("event=otel_export_resumed runs={}", pass->runs);
        if (pass->runs > 0) failing_ = false;
        return pass->runs > 0 && static_cast<std::int64_t>(pass->runs) >= config_.batch;
    } catch (const std::exception& e) {
        counters_->failed(e.what());
        log->error("event=otel_export_failed error=\"{}\"", e.what());
        return false;
    }
}

namespace detail {

std::pair<std::int64_t, std::string> otlp_partial_success(std::string_view body,
                                                          otel::Encoding encoding) {
    if (body.empty()) return {0, ""};
    if (encoding == otel::Encoding::kJson) {
        const auto doc = nlohmann::json::parse(body, nullptr, false);
        if (!doc.is_object() || !doc.contains("partialSuccess")) return {0, ""};
        const auto& partial = doc["partialSuccess"];
        if (!partial.is_object()) return {0, ""};
        std::int64_t rejected = 0;
        const auto spans = partial.value("rejectedSpans", nlohmann::json());
        // OTLP/JSON writes int64 as a decimal string; some receivers write a number.
        if (spans.is_number_integer()) rejected = spans.get<std::int64_t>();
        if (spans.is_string()) {
            try {
                rejected = std::stoll(spans.get<std::string>());
            } catch (const std::exception&) {
                rejected = 0;
            }
        }
        const auto message = partial.value("errorMessage", nlohmann::json());
        return {rejected, message.is_string() ? message.get<std::string>() : ""};
    }
    // ExportTraceServiceResponse: 1 partial_success {1 rejected_spans, 2 error_message}.
    const auto partial = proto_field(body, 1).bytes;
    if (!partial) return {0, ""};
    const auto rejected = proto_field(*partial, 1).number.value_or(0);
    const auto message = proto_field(*partial, 2).bytes.value_or("");
    return {static_cast<std::int64_t>(rejected), std::string(message)};
}

}  // namespace detail

}  // namespace glassbox::trace
