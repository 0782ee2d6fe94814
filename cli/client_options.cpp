// Shared client command options and the one-line typed error exit.
#include "cli/client_options.hpp"

#include <iostream>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "bus/bus_client.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"
#include "schema/explain_terms.hpp"

namespace glassbox::cli {

std::filesystem::path ClientOptions::home_path() const { return cli::resolve_home(home); }

std::string ClientOptions::broker_endpoint() const { return settings().text("broker.endpoint"); }

std::string ClientOptions::pub_endpoint() const { return settings().text("broker.pub_endpoint"); }

bus::BusClientConfig ClientOptions::bus_config() const {
    bus::BusClientConfig config;
    config.endpoint = broker_endpoint();
    config.curve = curve_keys(config.endpoint);
    config.connect_timeout = kBrokerConnectTimeout;
    config.max_message_bytes = schema::protocol::kDefaultMaxMessageBytes;
    return config;
}

std::optional<bus::CurveClientKeys> ClientOptions::curve_keys(std::string_view endpoint) const {
    auto keys = resolve_client_keys(security_settings(), home_path(), kClientKey, endpoint);
    if (!keys) exit_with_error(keys.error());
    return std::move(keys).value();
}

base::Result<std::vector<nlohmann::json>> call_bodies(const ClientOptions& options,
                                                      std::string_view service,
                                                      const nlohmann::json& body) {
    bus::BusClientConfig config = options.bus_config();
    bus::BusClient bus(config);
    auto replies = bus.call(service, body, options.timeout());
    if (!replies) return std::move(replies).error();
    std::vector<nlohmann::json> bodies;
    for (auto& reply : *replies) {
        if (reply.kind == bus::ReplyKind::kData || reply.kind == bus::ReplyKind::kFinal) {
            bodies.push_back(std::move(reply.body));
        }
    }
    return bodies;
}

std::vector<nlohmann::json> call_or_exit(const ClientOptions& options, std::string_view service,
                                         const nlohmann::json& body) {
    auto bodies = call_bodies(options, service, body);
    if (!bodies) exit_with_error(bodies.error());
    return std::move(bodies).value();
}

nlohmann::json call_for_object(const ClientOptions& options, std::string_view service,
                               const nlohmann::json& body) {
    auto bodies = call_or_exit(options, service, body);
    if (bodies.empty() || !bodies.back().is_object()) {
        exit_with_error(base::make_error(
            base::ErrorType::kDecodeError,
            "the " + std::string(service) + " service's reply is not a JSON object"));
    }
    return std::move(bodies.back());
}

namespace {

// --json prints explain triples as everything else that leaves glassbox does (HTTP, SSE, MCP):
// in the plain form, a dictionary body (docs/protocol.md §8.1) written out, also when a router
// or an agent forwards a sub-run's step as data ({"message_type": "explain", "explain": {…}}).
nlohmann::json with_plain_explain(nlohmann::json reply) {
    auto body = reply.find("body");
    if (body == reply.end() || !body->is_object()) return reply;
    if (schema::has_term_dictionary(*body)) {
        *body = schema::plain_explain_body(*body);
    } else if (auto inner = body->find("explain");
               inner != body->end() && inner->is_object() && schema::has_term_dictionary(*inner)) {
        *inner = schema::plain_explain_body(*inner);
    }
    return reply;
}

}  // namespace

base::Result<bus::Reply> print_json_replies(bus::Stream& stream, std::chrono::milliseconds wait) {
    for (;;) {
        auto reply = stream.next(wait);
        if (!reply) return std::move(reply).error();
        if (reply->kind == bus::ReplyKind::kError) return std::move(*reply->error);
        std::cout << dump_json(with_plain_explain(reply->to_json())) << std::endl;
        if (reply->terminal()) return reply;
    }
}

void add_client_options(CLI::App& command, ClientOptions& options, int default_timeout_ms,
                        ClientOptionSet set) {
    options.timeout_ms = default_timeout_ms;
    add_setting_option(command, "broker.endpoint", "--broker");
    if (set.pub) add_setting_option(command, "broker.pub_endpoint", "--pub");
    command.add_option("--home", options.home,
                       "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    command.add_flag("--json", options.json, "Machine-readable JSON output");
    add_client_security_options(command);
    if (set.timeout) {
        command
            .add_option("--timeout-ms", options.timeout_ms,
                        "Deadline of the request in milliseconds")
            ->capture_default_str()
            ->check(CLI::Range(1, 3'600'000));
    }
}

int exit_code_for(base::ErrorType type) noexcept {
    using base::ErrorType;
    switch (type) {
        case ErrorType::kInvalidRequest:
        case ErrorType::kInvalidJson:
        case ErrorType::kDecodeError:
        case ErrorType::kNotFound:
        case ErrorType::kUnknownService:
        case ErrorType::kMessageTooLarge:
        case ErrorType::kForbidden:
            return 2;
        default:
            return 1;
    }
}

void exit_with_error(const base::Error& error) {
    std::string line = error.describe();
    for (char& c : line) {
        if (c == '\n' || c == '\r') c = ' ';  // one line, whatever the message held
    }
    std::cerr << base::printable_utf8(line) << std::endl;  // valid UTF-8, whatever it quotes
    throw CLI::RuntimeError(exit_code_for(error.type));
}

std::string dump_json(const nlohmann::json& value, int indent) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string string_field(const nlohmann::json& body, const char* key) {
    if (!body.is_object()) return {};
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

std::optional<base::Error> body_error(const nlohmann::json& body) {
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object())
        return std::nullopt;
    const auto type = base::error_type_from_string(string_field(body["error"], "type"));
    return base::make_error(type.value_or(base::ErrorType::kInternal),
                            string_field(body["error"], "message"));
}

}  // namespace glassbox::cli
