// The table of glassbox's settings: one entry per key. A new setting is one more line here (and
// its flag, if it has one, is bound with add_setting_option where the command is built).
#include <limits>

#include "cli/settings.hpp"
#include "cli/storage_choice.hpp"
#include "http/otel_headers.hpp"
#include "schema/prices.hpp"
#include "storage/pg_dsn.hpp"
#include "text/redactor.hpp"

namespace glassbox::cli {
namespace {

using config::bool_setting;
using config::choice_setting;
using config::integer_setting;
using config::number_setting;
using config::Setting;
using config::text_setting;

constexpr std::int64_t kNoMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kHourMs = 3'600'000;
constexpr std::int64_t kDayMs = 86'400'000;

// A password: "***" unless empty (an empty one stays visible: nothing is set).
std::string masked_secret(std::string_view text) { return text.empty() ? std::string() : "***"; }

std::vector<Setting> glassbox_settings() {
    return {
        // Endpoints: the broker binds them; clients and workers connect to them.
        text_setting(
            "broker.endpoint", "tcp://127.0.0.1:5555",
            "Broker request endpoint: the broker binds it, clients and workers connect to it")
            .flag("--bind")
            .flag("--broker")
            .env_alias("GLASSBOX_BROKER"),
        text_setting("broker.pub_endpoint", "tcp://127.0.0.1:5556", "Explain topic endpoint (XPUB)")
            .flag("--pub"),
        text_setting("broker.spool", "", "Explain spool directory (empty: spool/ in the home)")
            .flag("--spool"),
        // Heartbeats and liveness: the broker, its workers and collectors use the same.
        integer_setting("broker.heartbeat_ms", 2'500, 10, kHourMs,
                        "Heartbeat interval of the broker and of every worker and collector")
            .flag("--heartbeat-ms"),
        integer_setting("broker.liveness", 3, 1, 100,
                        "Silent heartbeat intervals before a peer counts as dead")
            .flag("--liveness"),
        // Transport security (docs/security.md): CURVE with keys from the home unless these
        // name others; plain TCP only to a local endpoint or with security.insecure.
        text_setting(
            "security.curve_key", "",
            "This process's CURVE secret certificate (the broker's own for `broker`); "
            "empty: <home>/keys/NAME.key_secret (broker, client, worker or collector) when present")
            .flag("--curve-key")
            .env_alias("GLASSBOX_CURVE_KEY"),
        text_setting("security.curve_server_key", "",
                     "The broker's CURVE public key (Z85) or a certificate holding it; empty: "
                     "<home>/keys/broker.key")
            .flag("--curve-server-key")
            .env_alias("GLASSBOX_CURVE_SERVER_KEY"),
        text_setting("security.curve_allow", "",
                     "The broker's folder of allowed public certificates, each with its roles; "
                     "empty: <home>/keys/allowed")
            .flag("--curve-allow")
            .env_alias("GLASSBOX_CURVE_ALLOW"),
        bool_setting("security.insecure", false,
                     "Plain TCP without CURVE keys: any process that reaches the broker is trusted")
            .flag("--insecure")
            .env_alias("GLASSBOX_INSECURE"),
        integer_setting(
            "broker.ended_sessions_kept", 65'536, 1, 10'000'000,
            "Ended trace sessions the broker remembers, to refuse a worker's writes into them")
            .flag("--ended-sessions-kept"),
        // Broker timeouts.
        integer_setting("broker.max_retries", 2, 0, 100,
                        "Re-dispatches of a request whose worker died before replying")
            .flag("--max-retries"),
        integer_setting("broker.default_deadline_ms", 60'000, 1, kDayMs,
                        "Deadline of MDPC01 requests and of GBC01 requests with deadline 0")
            .flag("--default-deadline-ms"),
        integer_setting("broker.max_deadline_ms", kHourMs, 1, kDayMs,
                        "Longer GBC01 deadlines are clamped to this")
            .flag("--max-deadline-ms"),
        integer_setting("broker.unknown_service_wait_ms", 1'000, 0, kHourMs,
                        "How long a request for a never-registered service waits for a worker")
            .flag("--unknown-service-wait-ms"),
        integer_setting("broker.restart_grace_ms", 10'000, 0, kHourMs,
                        "After a start, how long a request for a service registered before waits "
                        "for its workers")
            .flag("--restart-grace-ms"),
        // Queue bounds and policies.
        integer_setting("broker.max_queue", 10'000, 1, 100'000'000,
                        "Bound of each service's request queue")
            .flag("--max-queue"),
        choice_setting("broker.overflow", "reject", {"reject", "drop-oldest"},
                       "A full service queue: reject the new request or drop the oldest")
            .flag("--overflow"),
        integer_setting("broker.max_message_bytes", std::int64_t{16} * 1024 * 1024, 1024,
                        std::int64_t{1} << 31, "Largest accepted message, all frames together")
            .flag("--max-message-bytes"),
        integer_setting(
            "broker.max_subscription_bytes", 264, 256, 1 << 20,
            "Largest explain topic subscription frame; a longer one closes its connection")
            .flag("--max-subscription-bytes"),
        integer_setting("broker.max_subscriptions_per_subscriber", 256, 1, 1 << 20,
                        "Explain topic subscriptions one subscriber may hold")
            .flag("--max-subscriptions-per-subscriber"),
        integer_setting("broker.max_subscribed_bytes_per_subscriber", std::int64_t{16} * 1024, 256,
                        1 << 30, "Explain topic prefix bytes one subscriber may hold")
            .flag("--max-subscribed-bytes-per-subscriber"),
        integer_setting("broker.max_subscriptions", 16'384, 1, 1 << 24,
                        "Explain topic subscriptions of all subscribers together")
            .flag("--max-subscriptions"),
        integer_setting("broker.max_subscribed_bytes", std::int64_t{1024} * 1024, 256, 1 << 30,
                        "Explain topic prefix bytes of all subscribers together")
            .flag("--max-subscribed-bytes"),
        integer_setting("broker.max_subscriber_inbound_bytes", std::int64_t{64} * 1024, 4096,
                        1 << 30,
                        "Bytes one explain topic subscriber may send (+1 KiB per second connected)")
            .flag("--max-subscriber-inbound-bytes"),
        // The explain spool.
        integer_setting("broker.spool_max_messages", 1'000'000, 1, kNoMax,
                        "Explain spool bound (messages)")
            .flag("--spool-max-messages"),
        integer_setting("broker.spool_max_bytes", std::int64_t{1} << 30, 1, kNoMax,
                        "Explain spool bound (bytes)")
            .flag("--spool-max-bytes"),
        choice_setting(
            "broker.spool_policy", "fail-request", {"fail-request", "drop-newest"},
            "A full or unwritable spool: fail the request or drop the new explain message")
            .flag("--spool-policy"),
        integer_setting(
            "broker.delivery_interval_ms", 10, 0, 1'000,
            "Explain messages go to trace collectors in batches at most this often (0: at once)")
            .flag("--delivery-interval-ms"),
        integer_setting("broker.io_threads", 1, 1, 16,
                        "libzmq I/O threads of the request endpoint: TCP, and CURVE's encryption, "
                        "run there (more help only with CURVE on more cores)")
            .flag("--io-threads"),

        // Worker processes.
        integer_setting("worker.drain_timeout_ms", 30'000, 0, kHourMs,
                        "On stop, how long a running request may finish before it is cancelled")
            .flag("--drain-timeout-ms"),

        // The trace collector.
        integer_setting("collector.window", 1'024, 1, 65'536,
                        "Unacknowledged explain deliveries the broker may hand the collector")
            .flag("--window"),
        integer_setting("collector.incomplete_after_s", 300, 1, std::int64_t{30} * 24 * 3600,
                        "A trace without an end and silent this long reads as incomplete")
            .flag("--incomplete-after-s"),
        bool_setting("collector.synchronous_normal", false,
                     "Commit traces without fsync per transaction (faster; the last may be lost on "
                     "power loss)")
            .flag("--synchronous-normal"),
        // Trace retention (docs/traces.md, "Retention"): the trace collector prunes.
        text_setting("traces.retention", "",
                     "Prune traces started longer ago than this (30d, 12h, 90m; empty: keep "
                     "forever); pinned and running ones stay")
            .flag("--retention"),
        integer_setting("traces.max_bytes", 0, 0, kNoMax,
                        "Prune the oldest traces while the trace store holds more bytes than this "
                        "(0: no bound)")
            .flag("--max-bytes"),
        integer_setting("traces.prune_interval_s", 60, 1, 86'400,
                        "How often the trace collector prunes by traces.retention and "
                        "traces.max_bytes")
            .flag("--prune-interval-s"),
        // Sampling (docs/traces.md, "Sampling"): the trace collector summarises the runs it does
        // not keep whole.
        number_setting("traces.sample", 1.0, 0.0, 1.0,
                       "Fraction of ordinary runs kept in full detail; the rest keep a summary "
                       "(errors, escalations, evaluated and pinned runs stay whole; 1: off)"),
        integer_setting("traces.sample_after_s", 600, 0, std::int64_t{30} * 86'400,
                        "How long after its end a run waits before it is summarised (a pin or an "
                        "evaluation meanwhile keeps it whole)"),

        // Cost (docs/traces.md, "Cost").
        text_setting("costs.prices", "",
                     "Prices per model, per million tokens: a table { \"MODEL\" = { input = "
                     "2.5, output = 10.0 } } (JSON in the environment)")
            .structured_value(),
        text_setting("costs.currency", "USD", "The currency of costs.prices, as shown"),

        // Redaction (docs/security.md, "Redaction"): applied by every worker before an explain
        // message leaves it, so nothing stored, spooled, exported or logged holds the original.
        text_setting("redaction.rules", "",
                     "Built-in rules applied to every scope: an array of \"email\", \"phone\", "
                     "\"card\", \"iban\" (JSON or a comma list in the environment)")
            .structured_value(),
        text_setting("redaction.patterns", "",
                     "Regular expressions: an array of { name, regex, scope = [\"question\", "
                     "\"answer\", \"observations\", \"documents\"] } (JSON in the environment)")
            .structured_value(),

        // OpenTelemetry export (docs/operations.md, "OpenTelemetry"): the trace collector sends
        // every finished run as spans over OTLP/HTTP. The OTEL_EXPORTER_OTLP_* variables every
        // OpenTelemetry SDK reads are read too, below glassbox's own.
        text_setting("otel.endpoint", "",
                     "OTLP/HTTP base URL; /v1/traces is appended (empty: no export)")
            .env_alias("OTEL_EXPORTER_OTLP_ENDPOINT"),
        text_setting("otel.traces_endpoint", "",
                     "OTLP/HTTP traces URL, used as it is (overrides otel.endpoint)")
            .env_alias("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        choice_setting("otel.protocol", "http/protobuf", {"http/protobuf", "http/json"},
                       "OTLP encoding: binary protobuf or JSON")
            .env_alias("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .env_alias("OTEL_EXPORTER_OTLP_PROTOCOL"),
        text_setting("otel.headers", "",
                     "Headers of every export request: key=value pairs, comma-separated, values "
                     "URL-encoded (shown masked)")
            .env_alias("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .env_alias("OTEL_EXPORTER_OTLP_HEADERS"),
        integer_setting("otel.timeout_ms", 10'000, 1, kHourMs, "One export request's bound")
            .env_alias("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .env_alias("OTEL_EXPORTER_OTLP_TIMEOUT"),
        text_setting("otel.service_name", "glassbox", "The spans' service.name resource attribute")
            .env_alias("OTEL_SERVICE_NAME"),
        integer_setting("otel.max_queue", 10'000, 1, kNoMax,
                        "Runs waiting for export at most; beyond it the oldest are dropped and "
                        "counted"),
        integer_setting("otel.interval_ms", 1'000, 10, kHourMs,
                        "How often the exporter looks for finished runs when idle"),

        // The HTTP gateway.
        text_setting("gateway.listen", "127.0.0.1:8080",
                     "HOST:PORT of the HTTP gateway and viewer (port 0: any free)")
            .flag("--listen")
            .flag("--gateway-listen"),
        text_setting("gateway.tokens", "",
                     "Bearer tokens file (owner-only); required for a non-loopback listen address")
            .flag("--tokens"),
        integer_setting("gateway.threads", 24, 1, 1'024, "HTTP worker threads").flag("--threads"),
        integer_setting("gateway.max_streams", 16, 1, 100'000,
                        "SSE streams open at once (one more: 503)")
            .flag("--max-streams"),
        integer_setting("gateway.max_body_bytes", 1 << 20, 1, std::int64_t{1} << 31,
                        "Largest request body (more: 413)")
            .flag("--max-body-bytes"),
        integer_setting("gateway.max_upload_bytes", std::int64_t{64} << 20, 1,
                        std::int64_t{1} << 40, "Largest upload to /api/v1/load/* (more: 413)")
            .flag("--max-upload-bytes"),
        number_setting("gateway.rate_limit", 50, 0, 1e9,
                       "Requests a second per client address, on average (0: no limit)")
            .flag("--rate-limit"),
        number_setting("gateway.rate_burst", 100, 0, 1e9, "Requests per client address at once")
            .flag("--rate-burst"),
        integer_setting("gateway.call_timeout_ms", 30'000, 1, kHourMs,
                        "Deadline of one bus call other than a question")
            .flag("--timeout-ms"),
        integer_setting("gateway.query_timeout_ms", 120'000, 1, kHourMs,
                        "Deadline of one question on the bus")
            .flag("--query-timeout-ms"),
        integer_setting("gateway.read_timeout_ms", 10'000, 10, 600'000,
                        "A client that sends nothing for this long is disconnected")
            .flag("--read-timeout-ms"),
        integer_setting("gateway.write_timeout_ms", 10'000, 10, 600'000,
                        "A client that reads nothing for this long is disconnected")
            .flag("--write-timeout-ms"),
        integer_setting("gateway.header_timeout_ms", 10'000, 10, 600'000,
                        "A request's head must arrive within this of its first byte (else 408)")
            .flag("--header-timeout-ms"),
        integer_setting("gateway.body_timeout_ms", 10'000, 10, 600'000,
                        "A request's body must arrive within this, plus a second per "
                        "gateway.body_min_rate bytes received (else 408)")
            .flag("--body-timeout-ms"),
        integer_setting("gateway.body_min_rate", 500, 0, std::int64_t{1} << 30,
                        "Bytes a second a request body must keep up after its first "
                        "gateway.body_timeout_ms (0: the whole body within that)")
            .flag("--body-min-rate"),
        integer_setting("gateway.max_connections", 1'024, 1, 1 << 20,
                        "Open HTTP connections at most (one more: 503)")
            .flag("--max-connections"),
        integer_setting("gateway.max_connections_per_client", 64, 1, 1 << 20,
                        "Open HTTP connections from one client address at most (one more: 503)")
            .flag("--max-connections-per-client"),
        integer_setting("gateway.max_queued_requests", 256, 1, 1 << 20,
                        "Whole requests waiting for an HTTP thread at most (one more: 503)"),
        integer_setting(
            "gateway.max_buffered_bytes", std::int64_t{256} << 20, 1 << 20, std::int64_t{1} << 40,
            "Request bodies held in memory at once, all connections together (past it: 503)"),
        integer_setting("gateway.max_head_bytes", std::int64_t{64} * 1024, 1024, 1 << 24,
                        "Largest request head, request line and header lines (more: 431)"),
        integer_setting("gateway.max_header_fields", 100, 1, 10'000,
                        "Header fields in one request at most (more: 431)"),
        integer_setting("gateway.mcp_session_idle_ms", 1'800'000, 1, 7 * kDayMs,
                        "An MCP session unused this long expires")
            .flag("--mcp-session-idle-ms"),
        integer_setting("gateway.mcp_max_sessions", 1'024, 1, 1 << 20, "Live MCP sessions at most")
            .flag("--mcp-max-sessions"),
        integer_setting("gateway.mcp_max_sessions_per_client", 16, 1, 1 << 20,
                        "Live MCP sessions of one client (its token, else its address) at most")
            .flag("--mcp-max-sessions-per-client"),

        // `glassbox up`.
        integer_setting("up.threads", 2, 1, 256,
                        "Worker threads per service process `glassbox up` starts (echo, "
                        "trace-collector, embeddings, store, llm)")
            .flag("--threads"),
        integer_setting("up.engine_threads", 8, 1, 256,
                        "Worker threads per engine process `glassbox up` starts (graph-rag, "
                        "document-rag, agent, query: they mostly wait on the services they call)")
            .flag("--engine-threads"),
        integer_setting("up.start_timeout_ms", 15'000, 1, kHourMs,
                        "How long the broker may take to bind")
            .flag("--start-timeout-ms"),
        bool_setting("up.gateway", true, "Start the HTTP gateway with the pipeline")
            .flag("--no-gateway"),

        // Client commands.
        text_setting("client.collection", "default",
                     "Knowledge collection of load, query, invoke and chat")
            .flag("--collection")
            .env_alias("GLASSBOX_COLLECTION"),

        // Model endpoints: the llm service.
        choice_setting("llm.provider", "auto", {"auto", "extractive", "openai"},
                       "auto: openai when a model is set, else the built-in extractive provider")
            .flag("--provider"),
        text_setting("llm.base_url", "https://api.openai.com", "openai: the API's base URL")
            .flag("--base-url"),
        text_setting("llm.model", "", "openai: the model name").flag("--model"),
        text_setting("llm.api_key_env", "OPENAI_API_KEY",
                     "openai: the environment variable holding the API key (empty or '-': none)")
            .flag("--api-key-env"),
        text_setting("llm.templates", "",
                     "Folder of prompt templates (empty: templates/ in the home, when it exists)")
            .flag("--templates"),
        integer_setting("llm.timeout_ms", 120'000, 1, kHourMs,
                        "openai: one completion, retries included")
            .flag("--timeout-ms"),
        integer_setting("llm.connect_timeout_ms", 5'000, 1, 600'000, "openai: one TCP/TLS connect")
            .flag("--connect-timeout-ms"),
        integer_setting("llm.max_retries", 2, 0, 10,
                        "openai: retries on 408/429/5xx/connection failures")
            .flag("--max-retries"),
        number_setting("llm.temperature", 0.0, 0.0, 2.0, "openai: sampling temperature"),
        integer_setting(
            "llm.extractive_delay_ms", 0, 0, 600'000,
            "extractive: wait before each answer (a model's latency, for demos and tests)")
            .flag("--extractive-delay-ms"),
        text_setting("llm.config", "",
                     "JSON file of llm settings (docs/llm.md), below every other source")
            .flag("--config"),

        // Model endpoints: the embeddings service.
        choice_setting("embeddings.provider", "hashing", {"hashing", "openai"},
                       "hashing (built-in feature hashing) or openai")
            .flag("--provider"),
        integer_setting("embeddings.dim", 0, 0, 65'536,
                        "Vector size (0: the provider's; hashing 384)")
            .flag("--dim"),
        text_setting("embeddings.base_url", "https://api.openai.com", "openai: the API's base URL")
            .flag("--base-url"),
        text_setting("embeddings.model", "text-embedding-3-small", "openai: the model name")
            .flag("--model"),
        text_setting("embeddings.api_key_env", "OPENAI_API_KEY",
                     "openai: the environment variable holding the API key (empty or '-': none)")
            .flag("--api-key-env"),
        integer_setting("embeddings.batch_size", 64, 1, 2'048, "openai: texts per HTTP request")
            .flag("--batch-size"),
        integer_setting("embeddings.timeout_ms", 30'000, 1, 600'000,
                        "openai: per HTTP request, retries included")
            .flag("--timeout-ms"),
        integer_setting("embeddings.max_retries", 3, 0, 10,
                        "openai: retries on 429/5xx/connection failures")
            .flag("--max-retries"),
        integer_setting("embeddings.max_texts", 1'024, 1, 100'000,
                        "Texts in one embeddings request"),
        integer_setting("embeddings.max_text_bytes", 65'536, 1, std::int64_t{16} * 1024 * 1024,
                        "UTF-8 bytes of one text"),
        text_setting("embeddings.config", "",
                     "JSON file of embeddings settings, below every other source")
            .flag("--config"),

        // Retrieval defaults: what a request that leaves a limit out (or 0) gets; the workers'
        // bounds above them are fixed (docs/rag.md). `invoke --entity-limit` etc. set one
        // request's.
        integer_setting("graph_rag.entity_limit", 50, 1, 1'000, "Seed entities per concept"),
        integer_setting("graph_rag.triple_limit", 30, 1, 1'000, "Triples per entity and hop"),
        integer_setting("graph_rag.max_subgraph_size", 150, 1, 10'000, "Edges explored at most"),
        integer_setting("graph_rag.max_path_length", 3, 1, 5, "Hops from the seed entities"),
        integer_setting("graph_rag.edge_score_limit", 30, 1, 1'000, "Edges scored"),
        integer_setting("graph_rag.edge_limit", 25, 1, 1'000,
                        "Edges kept for the answer (at most the edges scored)"),
        integer_setting("graph_rag.explored_edges_recorded", 500, 0, 500,
                        "Explored edges the trace records, the first in traversal order (0: only "
                        "their count)"),
        integer_setting("document_rag.doc_limit", 20, 1, 1'000, "Chunks the answer uses"),
        integer_setting("document_rag.fetch_limit", 20, 1, 1'000,
                        "Chunks fetched before re-ranking (at least doc_limit)"),
        integer_setting("rag.call_timeout_ms", 0, 0, kHourMs,
                        "Graph and document RAG: deadline of each call to another service (0: the "
                        "request's time left)")
            .flag("--call-timeout-ms"),
        number_setting("rag.min_confidence", 0.25, 0.0, 1.0,
                       "Graph and document RAG: below this calibrated confidence an answer says it "
                       "does not know (0: never)")
            .flag("--min-confidence"),
        integer_setting("agent.max_iterations", 10, 1, 100,
                        "Agent loop iterations at most (a request may lower it)")
            .flag("--max-iterations"),
        integer_setting("agent.call_timeout_ms", 0, 0, kHourMs,
                        "Agent: deadline of each tool call (0: the request's time left)")
            .flag("--call-timeout-ms"),
        number_setting("agent.min_confidence", 0.25, 0.0, 1.0,
                       "Agent: below this calibrated confidence an answer says it does not know "
                       "(0: never)")
            .flag("--min-confidence"),
        choice_setting("query.reflection", "model-free", {"model-free", "llm"},
                       "How the router judges an answer's relevance")
            .flag("--reflection"),
        number_setting("query.confidence_threshold", 0.2, 0.0, 1.0,
                       "An answer below this calibrated confidence is escalated")
            .flag("--confidence-threshold"),
        number_setting("query.relevance_threshold", 0.4, 0.0, 1.0,
                       "An answer without a calibrated confidence (or one a model judged) is "
                       "escalated below this relevance")
            .flag("--relevance-threshold"),
        number_setting("query.min_confidence", 0.25, 0.0, 1.0,
                       "Router: below this calibrated confidence (after the engines' disagreement "
                       "lowered it) an answer says it does not know (0: never)")
            .flag("--min-confidence"),
        integer_setting("query.max_escalations", 2, 0, 2, "Escalations per question at most")
            .flag("--max-escalations"),
        integer_setting("query.call_timeout_ms", 0, 0, kHourMs,
                        "Router: deadline of each engine call (0: the request's time left)")
            .flag("--call-timeout-ms"),
        integer_setting("query.reflection_timeout_ms", 30'000, 1, 600'000,
                        "Router: deadline of each judge or rephrase call")
            .flag("--reflection-timeout-ms"),

        // Storage (docs/configuration.md#storage-backend): where the stores keep their data. No
        // flags: a DSN on a command line would show its password to `ps`.
        choice_setting("storage.backend", "sqlite", {"sqlite", "postgres"},
                       "sqlite: files in the home; postgres: the PostgreSQL database "
                       "storage.postgres_dsn names (stores move to it in stages)"),
        text_setting("storage.postgres_dsn", "",
                     "postgres: the database's libpq connection string (shown with its password "
                     "masked)")
            .env_alias("GLASSBOX_PG_DSN"),
        text_setting("storage.postgres_read_dsn", "",
                     "postgres: a read-only connection string for the trace store's queries (a "
                     "replica; empty: storage.postgres_dsn)"),

        // SPARQL 1.1 over traces and knowledge (docs/sparql.md). No flags: the password would show
        // to `ps`; `glassbox up` writes the engine it starts into the home's runtime state.
        choice_setting("sparql.engine", "", {"", "virtuoso"},
                       "virtuoso: `glassbox up` starts Virtuoso Open Source in <home>/virtuoso and "
                       "sets the other sparql.* keys for its processes (empty: none)"),
        text_setting("sparql.endpoint", "",
                     "SPARQL 1.1 Protocol query URL, e.g. http://127.0.0.1:8890/sparql (empty: "
                     "no engine; traces and collections are not mirrored)"),
        text_setting("sparql.graph_store", "",
                     "SPARQL 1.1 Graph Store HTTP Protocol URL the mirrors write to (Virtuoso: "
                     "http://HOST:PORT/sparql-graph-crud-auth)"),
        text_setting("sparql.user", "", "User of the Graph Store writes (HTTP digest or basic)"),
        text_setting("sparql.password", "",
                     "Password of sparql.user (shown masked; kept in the runtime state when `up` "
                     "starts the engine)"),
        integer_setting("sparql.timeout_ms", 30'000, 1, kHourMs,
                        "One SPARQL query's bound, sent to the engine and used on the wire"),
        integer_setting(
            "sparql.port", 0, 0, 65'535,
            "HTTP port of the Virtuoso `glassbox up` starts, on 127.0.0.1 (0: any free)"),
        integer_setting("sparql.mirror_interval_ms", 1'000, 10, kHourMs,
                        "How often a mirror looks for work when idle, and retries an engine that "
                        "is down"),

        // Logs.
        choice_setting("log.level", "info",
                       {"trace", "debug", "info", "warn", "error", "critical", "off"},
                       "Lowest level written")
            .flag("--log-level"),
        choice_setting("log.format", "human", {"human", "json"},
                       "human: key=value lines; json: one JSON object per line, for log collectors")
            .flag("--log-format"),
    };
}

}  // namespace

const std::vector<SettingRule>& settings_rules() {
    static const std::vector<SettingRule> rules{
        {"storage.postgres_dsn", storage::masked_dsn, connection_string_problem,
         std::string(kConnectionStringValues)},
        {"storage.postgres_read_dsn", storage::masked_dsn, connection_string_problem,
         std::string(kConnectionStringValues)},
        {"sparql.password", masked_secret, nullptr, {}},
        // OpenTelemetry (docs/operations.md): the collector parses it with the same parser.
        {"otel.headers", masked_secret, http::otel_headers_problem, {}},
        // Cost (docs/traces.md, "Cost"): the trace collector reads it with the same parser.
        {"costs.prices", nullptr, schema::prices_problem, {}},
        // Redaction (docs/security.md, "Redaction"): every worker parses them with the same parser.
        {"redaction.rules", nullptr, text::redaction_rules_problem,
         "an array of \"email\", \"phone\", \"card\", \"iban\" (or a comma list)"},
        {"redaction.patterns", nullptr, text::redaction_patterns_problem,
         "an array of { name, regex, scope }"},
    };
    return rules;
}

const config::Registry& settings_registry() {
    static const config::Registry registry{glassbox_settings()};
    return registry;
}

}  // namespace glassbox::cli
