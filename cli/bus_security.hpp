// How a glassbox process secures its bus connections: the CURVE flags every bus command takes,
// the keys in the home that `glassbox up` creates, and the rule that picks CURVE or plain TCP
// (docs/security.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "base/result.hpp"
#include "bus/curve_keys.hpp"

namespace glassbox::cli {

// The key names in <home>/keys/: the broker's pair, and one pair per kind of local process.
inline constexpr std::string_view kBrokerKey = "broker";
inline constexpr std::string_view kClientKey = "client";        // the CLI and the gateway
inline constexpr std::string_view kWorkerKey = "worker";        // every worker but the collector
inline constexpr std::string_view kCollectorKey = "collector";  // the trace collector

// <home>/keys (owner-only): the pairs; <home>/keys/allowed: the public certificates the broker
// admits.
std::filesystem::path keys_folder(const std::filesystem::path& home);
std::filesystem::path allowed_folder(const std::filesystem::path& home);

// The local set `glassbox up` runs on: the broker's pair, and client (client, subscriber),
// worker (client, worker:*) and collector (collector, worker:trace) pairs whose public
// certificates are in the allowed folder. Pairs that exist are kept; missing ones are made.
base::Result<void> ensure_local_keys(const std::filesystem::path& home);

// The settings security.* (cli/settings_table.cpp, docs/configuration.md): flags, GLASSBOX_*
// variables or <home>/config.toml.
struct SecurityOptions {
    std::string server_key;  // security.curve_server_key: the broker's public key, or a certificate
    std::string key;         // security.curve_key: this process's secret certificate
    std::string allow;       // security.curve_allow (the broker only): the allowed keys folder
    bool insecure = false;   // security.insecure: plain TCP, knowingly
};
// This process's, from its resolved configuration.
SecurityOptions security_settings();

// --curve-server-key, --curve-key, --insecure on a client or worker command; the broker's own
// set (--curve-key, --curve-allow, --insecure).
void add_client_security_options(CLI::App& command);
void add_broker_security_options(CLI::App& command);

// A client's or worker's keys, by this rule:
// - --curve-key and/or --curve-server-key given: CURVE with them, the missing one from the home
//   (<home>/keys/<key_name>.key_secret, <home>/keys/broker.key);
// - else --insecure: plain;
// - else both in the home: CURVE (what `glassbox up` made);
// - else plain, but only to a local endpoint: plain TCP to another host needs --insecure.
// nullopt: plain. Errors name the file or flag to fix.
base::Result<std::optional<bus::CurveClientKeys>> resolve_client_keys(
    const SecurityOptions& options, const std::filesystem::path& home, std::string_view key_name,
    std::string_view endpoint);

// The broker's keys: --curve-key (with --curve-allow, default <home>/keys/allowed), else
// --insecure: none, else <home>/keys/broker.key_secret if it exists, else none (plain; the broker
// refuses it on a non-local endpoint).
struct BrokerKeys {
    bus::CurveCertificate certificate;
    std::filesystem::path allow_folder;
};
base::Result<std::optional<BrokerKeys>> resolve_broker_keys(const SecurityOptions& options,
                                                            const std::filesystem::path& home);

}  // namespace glassbox::cli
