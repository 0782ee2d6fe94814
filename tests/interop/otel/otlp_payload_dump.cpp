// otlp_payload_dump STORE SESSION OUTDIR: the OpenTelemetry spans of a stored run (read-only
// from the trace store file STORE) written as the encoder's two request bodies, OUTDIR/payload.pb
// and OUTDIR/payload.json, and as OUTDIR/spans.json, the spans themselves for the interop check
// to compare the official decoder's reading with (ids hex, times decimal strings, attributes by
// key).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "workers/trace_collector/otlp_encode.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace {

using glassbox::trace::otel::AttributeValue;
using glassbox::trace::otel::Span;
using nlohmann::json;

json value_json(const AttributeValue& value) {
    return std::visit(
        [](const auto& v) -> json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::int64_t>) {
                return json{{"int", std::to_string(v)}};
            } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                json out = json::array();
                for (const auto n : v) out.push_back(std::to_string(n));
                return json{{"ints", out}};
            } else if constexpr (std::is_same_v<T, std::string>) {
                return json{{"string", v}};
            } else if constexpr (std::is_same_v<T, double>) {
                return json{{"double", v}};
            } else if constexpr (std::is_same_v<T, bool>) {
                return json{{"bool", v}};
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                return json{{"strings", v}};
            } else {
                return json{{"doubles", v}};
            }
        },
        value);
}

json span_json(const Span& span) {
    json attributes = json::object();
    for (const auto& a : span.attributes) attributes[a.key] = value_json(a.value);
    return json{{"traceId", span.trace_id},
                {"spanId", span.span_id},
                {"parentSpanId", span.parent_span_id},
                {"name", span.name},
                {"kind", static_cast<int>(span.kind)},
                {"startTimeUnixNano", std::to_string(span.start_ns)},
                {"endTimeUnixNano", std::to_string(span.end_ns)},
                {"attributes", attributes},
                {"status",
                 json{{"code", static_cast<int>(span.status)}, {"message", span.status_message}}}};
}

bool write(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    return static_cast<bool>(out);
}

int dump(int argc, char** argv) {
    namespace trace = glassbox::trace;
    if (argc != 4) {
        std::fprintf(stderr, "usage: otlp_payload_dump STORE SESSION OUTDIR\n");
        return 2;
    }
    auto store =
        trace::TraceStore::open(std::filesystem::path(argv[1]), trace::OpenMode::kReadOnly);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().describe().c_str());
        return 1;
    }
    auto spans = (*store)->otel_spans(argv[2]);
    if (!spans) {
        std::fprintf(stderr, "%s\n", spans.error().describe().c_str());
        return 1;
    }
    const std::filesystem::path dir(argv[3]);
    std::filesystem::create_directories(dir);
    trace::otel::Resource resource;
    resource.service_name = "glassbox-interop";
    json expected = json::array();
    for (const auto& span : *spans) expected.push_back(span_json(span));
    const bool ok =
        write(dir / "payload.pb", trace::otel::encode_export_request(
                                      *spans, resource, trace::otel::Encoding::kProtobuf)) &&
        write(dir / "payload.json",
              trace::otel::encode_export_request(*spans, resource, trace::otel::Encoding::kJson)) &&
        write(dir / "spans.json", expected.dump());
    if (!ok) {
        std::fprintf(stderr, "cannot write to %s\n", argv[3]);
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return dump(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "otlp_payload_dump: %s\n", e.what());
        return 1;
    }
}
