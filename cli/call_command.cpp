// `glassbox call <service> '<json>'`: sends any request and prints each reply as one JSON line.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "schema/protocol.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct CallOptions {
    ClientOptions client;
    std::string service;
    std::string body = "{}";
};

// The body frame to send. Workers take JSON, so it is checked here and a bad one never leaves;
// mmi.service takes a bare service name (7/MDP MMI), given bare or as a JSON string.
std::string request_body(const CallOptions& options) {
    const auto parsed = schema::parse_untrusted_json(options.body);
    if (options.service == schema::protocol::kMmiService) {
        return parsed && parsed->is_string() ? parsed->get<std::string>() : options.body;
    }
    if (!parsed)
        exit_with_error(
            make_error(ErrorType::kInvalidJson, "the request body: " + parsed.error().message));
    return parsed->dump();
}

void run_call(const CallOptions& options) {
    const std::string body = request_body(options);
    bus::BusClientConfig config = options.client.bus_config();
    bus::BusClient bus(config);
    auto stream = bus::open_stream(bus, options.service, body, options.client.timeout());
    if (!stream) exit_with_error(stream.error());
    // The client's backstop (deadline + grace) ends the stream, so this wait always terminates.
    const auto wait = options.client.timeout() + config.deadline_grace + std::chrono::seconds{1};
    if (auto final = print_json_replies(*stream, wait); !final) exit_with_error(final.error());
}

}  // namespace

void add_call_command(CLI::App& app) {
    auto [command, options] = add_command<CallOptions>(
        app, "call",
        "Send one request to a service and print each reply as a JSON line "
        "({\"kind\":\"data\"|\"explain\"|\"final\",\"body\":...}); an error goes to stderr",
        run_call);
    command->add_option("service", options->service, "Service name")->required();
    command->add_option("body", options->body, "Request body as JSON (default {})");
    add_client_options(*command, options->client);
}

}  // namespace glassbox::cli
