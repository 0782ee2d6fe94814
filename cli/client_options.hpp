// Options every client command shares (--broker, --home, --json, --timeout-ms) and its error exit.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <CLI/CLI.hpp>

#include "base/result.hpp"
#include "bus/bus_client.hpp"
#include "cli/bus_security.hpp"
#include "schema/messages.hpp"

namespace glassbox::cli {

// --broker and --pub set the settings broker.endpoint and broker.pub_endpoint (cli/settings.hpp:
// flag, else GLASSBOX_BROKER_ENDPOINT / GLASSBOX_BROKER, else <home>/config.toml, else what
// `glassbox up` bound, else tcp://127.0.0.1:5555 and :5556).
struct ClientOptions {
    std::string home;   // empty: $GLASSBOX_HOME, else $HOME/.glassbox
    bool json = false;  // machine-readable output on stdout
    int timeout_ms = 30'000;

    std::filesystem::path home_path() const;
    // The effective broker.endpoint and broker.pub_endpoint.
    std::string broker_endpoint() const;
    std::string pub_endpoint() const;
    std::chrono::milliseconds timeout() const { return std::chrono::milliseconds{timeout_ms}; }
    // A bus client's config for this broker: a request that no broker answers the connection of
    // within kBrokerConnectTimeout ends with BrokerUnavailable instead of waiting out its deadline.
    bus::BusClientConfig bus_config() const;
    // This client's CURVE keys for `endpoint` (nullopt: plain); exits with the typed error when
    // the keys given or found cannot be used.
    std::optional<bus::CurveClientKeys> curve_keys(std::string_view endpoint) const;
};

// Long enough for a broker on another host (or one just starting) to accept the connection;
// short enough that a user with no broker running is told so at once.
inline constexpr std::chrono::milliseconds kBrokerConnectTimeout{3'000};

struct ClientOptionSet {
    bool pub = false;     // register --pub too (commands that watch the explain topic)
    bool timeout = true;  // register --timeout-ms
};

// Registers the shared options on `command`, writing into `options` (which must outlive parsing).
void add_client_options(CLI::App& command, ClientOptions& options, int default_timeout_ms = 30'000,
                        ClientOptionSet set = {});

// One request to `service` on a connection of its own, waited for: the bodies of its PARTIAL data
// replies, then of its FINAL; or the typed error (the service's, the bus's, a deadline).
base::Result<std::vector<nlohmann::json>> call_bodies(const ClientOptions& options,
                                                      std::string_view service,
                                                      const nlohmann::json& body);
// As call_bodies; a typed error exits.
std::vector<nlohmann::json> call_or_exit(const ClientOptions& options, std::string_view service,
                                         const nlohmann::json& body);
// As call_or_exit, for services that answer one JSON object: that FINAL body.
nlohmann::json call_for_object(const ClientOptions& options, std::string_view service,
                               const nlohmann::json& body);

// Prints each reply of `stream` as one JSON line ({"kind":...,"body":...}) up to its FINAL, which
// it returns; an ERROR reply (not printed) or the stream's own error is returned as the error.
base::Result<bus::Reply> print_json_replies(bus::Stream& stream, std::chrono::milliseconds wait);

// Feeds the data and explain replies of `stream` to `printer` (its data() and explain()) and
// returns the terminal reply, FINAL or ERROR, for the caller to finish the printer with; on the
// stream's own error (a timeout, a lost broker) the printer is aborted and the error returned.
template <typename Printer>
base::Result<bus::Reply> feed_replies(bus::Stream& stream, std::chrono::milliseconds wait,
                                      Printer& printer) {
    for (;;) {
        auto reply = stream.next(wait);
        if (!reply) {
            printer.abort();
            return std::move(reply).error();
        }
        if (reply->terminal()) return reply;
        if (reply->kind == bus::ReplyKind::kData) {
            printer.data(reply->body);
        } else {
            printer.explain(reply->body);
        }
    }
}

// Exit code for a typed error:
//   2  bad input, a named thing that is not there, or a key without the role: InvalidRequest,
//      InvalidJson, DecodeError, Forbidden,
//      NotFound, UnknownService, MessageTooLarge;
//   1  everything else (the service or the bus failed: deadlines, workers lost, timeouts, ...).
// (An unknown command exits 2 too, cli/command_typos; CLI11 exits 105-115 for any other command
// line it cannot parse.)
int exit_code_for(base::ErrorType type) noexcept;

// Prints `error.describe()` as one line on stderr and throws CLI::RuntimeError(exit_code_for(...)),
// which main() turns into the process exit code.
[[noreturn]] void exit_with_error(const base::Error& error);

// `value` as JSON text for stdout (ill-formed UTF-8 replaced: printing never throws).
std::string dump_json(const nlohmann::json& value, int indent = -1);

// A reply decoded as the contract's type, or the decode error as the exit.
template <typename T>
T decoded_or_exit(const nlohmann::json& reply) {
    auto typed = schema::decode<T>(reply);
    if (!typed) exit_with_error(typed.error());
    return std::move(typed).value();
}

// A reply body's string field, "" when absent or not a string (replies are read leniently).
std::string string_field(const nlohmann::json& body, const char* key);

// A FINAL body's own typed error ({"error": {"type", "message"}}), if it carries one.
std::optional<base::Error> body_error(const nlohmann::json& body);

}  // namespace glassbox::cli
