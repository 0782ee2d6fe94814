// CURVE or plain: the flags, the home's key set, and the rule between them.
#include "cli/bus_security.hpp"

#include <system_error>

#include "base/owner_only.hpp"
#include "cli/settings.hpp"

namespace glassbox::cli {

namespace fs = std::filesystem;
using base::ErrorType;

fs::path keys_folder(const fs::path& home) { return home / "keys"; }
fs::path allowed_folder(const fs::path& home) { return keys_folder(home) / "allowed"; }

namespace {

bool path_exists(const fs::path& path) {
    std::error_code error;
    return fs::exists(path, error);
}

// The roles of the local set's keys.
bus::PeerRoles local_roles(std::string_view name) {
    bus::PeerRoles roles;
    if (name == kClientKey) {
        roles.client = true;
        roles.subscriber = true;
    } else if (name == kWorkerKey) {
        roles.client = true;
        roles.any_worker = true;
    } else if (name == kCollectorKey) {
        roles.collector = true;
        roles.services.emplace_back("trace");
    }
    return roles;
}

base::Result<bus::CurveCertificate> secret_in_home(const fs::path& home, std::string_view name) {
    return bus::read_secret_certificate(bus::secret_certificate_path(keys_folder(home), name));
}

}  // namespace

base::Result<void> ensure_local_keys(const fs::path& home) {
    const fs::path keys = keys_folder(home);
    if (auto made = base::ensure_owner_only_folder(keys); !made) return made;
    if (auto made = base::ensure_owner_only_folder(allowed_folder(home)); !made) return made;
    for (const std::string_view name : {kBrokerKey, kClientKey, kWorkerKey, kCollectorKey}) {
        if (!path_exists(bus::secret_certificate_path(keys, name))) {
            auto made = bus::generate_certificate(std::string{name}, local_roles(name));
            if (!made) return made.error();
            if (auto written = bus::write_certificate_pair(keys, made.value()); !written) {
                return written;
            }
        }
        if (name == kBrokerKey) continue;  // the broker does not connect to itself
        // The allowed copy follows the pair: a pair made again (its secret deleted) replaces it.
        auto pair = secret_in_home(home, name);
        if (!pair) return pair.error();
        const fs::path allowed = bus::public_certificate_path(allowed_folder(home), name);
        auto current = bus::read_public_certificate(allowed);
        if (!current || current.value().public_key != pair.value().public_key) {
            if (auto written = base::write_owner_only_file(
                    allowed, bus::public_certificate_text(pair.value()));
                !written) {
                return written;
            }
        }
    }
    return {};
}

SecurityOptions security_settings() {
    const auto& s = settings();
    return SecurityOptions{s.text("security.curve_server_key"), s.text("security.curve_key"),
                           s.text("security.curve_allow"), s.boolean("security.insecure")};
}

void add_client_security_options(CLI::App& command) {
    add_setting_option(command, "security.curve_server_key", "--curve-server-key");
    add_setting_option(command, "security.curve_key", "--curve-key");
    add_setting_flag(command, "security.insecure", "--insecure", true,
                     "Plain TCP without CURVE, even to another host");
}

void add_broker_security_options(CLI::App& command) {
    add_setting_option(command, "security.curve_key", "--curve-key");
    add_setting_option(command, "security.curve_allow", "--curve-allow");
    add_setting_flag(command, "security.insecure", "--insecure", true,
                     "Plain TCP without CURVE, even on an address other hosts reach");
}

base::Result<std::optional<bus::CurveClientKeys>> resolve_client_keys(
    const SecurityOptions& options, const fs::path& home, std::string_view key_name,
    std::string_view endpoint) {
    const fs::path own_path = options.key.empty()
                                  ? bus::secret_certificate_path(keys_folder(home), key_name)
                                  : fs::path{options.key};
    const fs::path server_path = bus::public_certificate_path(keys_folder(home), kBrokerKey);
    const bool asked = !options.key.empty() || !options.server_key.empty();
    if (!asked) {
        if (options.insecure) return std::optional<bus::CurveClientKeys>{};
        if (!path_exists(own_path) || !path_exists(server_path)) {
            if (bus::is_local_endpoint(endpoint)) return std::optional<bus::CurveClientKeys>{};
            return base::make_error(
                ErrorType::kInvalidRequest,
                "no CURVE keys for " + std::string{endpoint} + " (looked for " + own_path.string() +
                    " and " + server_path.string() +
                    "): give --curve-key and --curve-server-key, or --insecure for plain TCP");
        }
    }
    auto own = bus::read_secret_certificate(own_path);
    if (!own) return own.error();
    std::string server_key;
    if (!options.server_key.empty()) {
        auto read = bus::read_server_key(options.server_key);
        if (!read) return read.error();
        server_key = std::move(read).value();
    } else {
        auto server = bus::read_public_certificate(server_path);
        if (!server) {
            return base::make_error(server.error().type,
                                    "the broker's public key: " + server.error().message +
                                        " (give --curve-server-key)");
        }
        server_key = server.value().public_key;
    }
    return std::optional<bus::CurveClientKeys>{bus::CurveClientKeys{
        std::move(server_key), own.value().public_key, own.value().secret_key}};
}

base::Result<std::optional<BrokerKeys>> resolve_broker_keys(const SecurityOptions& options,
                                                            const fs::path& home) {
    fs::path key_path{options.key};
    if (key_path.empty()) {
        if (options.insecure) return std::optional<BrokerKeys>{};
        key_path = bus::secret_certificate_path(keys_folder(home), kBrokerKey);
        if (!path_exists(key_path)) return std::optional<BrokerKeys>{};
    }
    auto certificate = bus::read_secret_certificate(key_path);
    if (!certificate) return certificate.error();
    fs::path allow = options.allow.empty() ? allowed_folder(home) : fs::path{options.allow};
    if (!path_exists(allow)) {
        return base::make_error(ErrorType::kInvalidRequest,
                                "no allowed keys folder " + allow.string() +
                                    " (--curve-allow): CURVE admits only the keys listed there");
    }
    return std::optional<BrokerKeys>{BrokerKeys{std::move(certificate).value(), std::move(allow)}};
}

}  // namespace glassbox::cli
