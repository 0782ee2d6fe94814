// `glassbox keys`: CURVE key pairs and the broker's allowed keys (docs/security.md).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/owner_only.hpp"
#include "bus/curve_keys.hpp"
#include "cli/bus_security.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

struct KeysOptions {
    std::string home;
    std::string dir;  // empty: <home>/keys
    std::string name;
    std::vector<std::string> roles;
    std::string as;  // keys allow --as: the name the allowed copy takes
    bool force = false;
    bool json = false;

    fs::path folder() const {
        return dir.empty() ? keys_folder(resolve_home(home)) : fs::path{dir};
    }
};

[[noreturn]] void fail(const base::Error& error) { exit_with_error(error); }

// The keys folder, owner-only: in the home (itself made owner-only) unless --dir names another.
void ensure_folder(const KeysOptions& options) {
    if (options.dir.empty()) {
        if (auto made = base::ensure_home_folder(resolve_home(options.home)); !made)
            fail(made.error());
    }
    if (auto made = base::ensure_owner_only_folder(options.folder()); !made) fail(made.error());
}

void run_new(const KeysOptions& options) {
    std::string joined;
    for (const auto& role : options.roles) joined += role + " ";
    auto roles = bus::parse_roles(joined);
    if (!roles) fail(roles.error());
    const fs::path folder = options.folder();
    ensure_folder(options);
    const fs::path secret = bus::secret_certificate_path(folder, options.name);
    std::error_code error;
    if (fs::exists(secret, error) && !options.force) {
        fail(base::make_error(
            base::ErrorType::kInvalidRequest,
            secret.string() + " exists; --force replaces it (its old public key stops working)"));
    }
    auto certificate = bus::generate_certificate(options.name, std::move(roles).value());
    if (!certificate) fail(certificate.error());
    if (auto written = bus::write_certificate_pair(folder, certificate.value()); !written)
        fail(written.error());
    if (options.json) {
        std::cout << nlohmann::json{{"name", certificate.value().name},
                                    {"roles", certificate.value().roles.to_string()},
                                    {"public_key", certificate.value().public_key},
                                    {"public_certificate",
                                     bus::public_certificate_path(folder, options.name).string()},
                                    {"secret_certificate", secret.string()}}
                         .dump()
                  << "\n";
        return;
    }
    std::cout << "key pair '" << options.name << "' (roles: "
              << (certificate.value().roles.to_string().empty()
                      ? "none"
                      : certificate.value().roles.to_string())
              << ")\n  public key   " << certificate.value().public_key << "\n  certificate  "
              << bus::public_certificate_path(folder, options.name).string()
              << "  (give this one to the broker: glassbox keys allow FILE)\n  secret       "
              << secret.string() << "  (owner-only; never copy it off this host)\n";
}

// A name in the folder, or a path to a certificate file.
fs::path certificate_file(const KeysOptions& options) {
    fs::path given{options.name};
    std::error_code error;
    if (given.has_parent_path() || fs::is_regular_file(given, error)) return given;
    const fs::path folder = options.folder();
    fs::path public_file = bus::public_certificate_path(folder, options.name);
    if (fs::exists(public_file, error)) return public_file;
    return bus::secret_certificate_path(folder, options.name);
}

void run_show(const KeysOptions& options) {
    if (!options.name.empty()) {
        auto certificate = bus::read_public_certificate(certificate_file(options));
        if (!certificate) fail(certificate.error());
        if (options.json) {
            std::cout << nlohmann::json{{"name", certificate.value().name},
                                        {"roles", certificate.value().roles.to_string()},
                                        {"public_key", certificate.value().public_key}}
                             .dump()
                      << "\n";
        } else {
            std::cout << certificate.value().public_key << "\n";
        }
        return;
    }
    // Every certificate in the folder and in its allowed/ folder.
    const fs::path folder = options.folder();
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& [where, path] :
         {std::pair{"own", folder}, std::pair{"allowed", folder / "allowed"}}) {
        std::error_code error;
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator{path, error}) {
            if (entry.path().extension() == ".key") files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            auto certificate = bus::read_public_certificate(file);
            if (!certificate) {
                std::cerr << "glassbox keys: " << certificate.error().message << "\n";
                continue;
            }
            listed.push_back({{"folder", where},
                              {"name", certificate.value().name},
                              {"roles", certificate.value().roles.to_string()},
                              {"public_key", certificate.value().public_key},
                              {"file", file.string()}});
        }
    }
    if (options.json) {
        std::cout << listed.dump() << "\n";
        return;
    }
    if (listed.empty()) {
        std::cout << "no keys in " << folder.string()
                  << " (glassbox keys new NAME, or glassbox up makes them)\n";
        return;
    }
    for (const auto& key : listed) {
        std::cout << key["folder"].get<std::string>() << "\t" << key["name"].get<std::string>()
                  << "\t" << key["public_key"].get<std::string>() << "\t"
                  << key["roles"].get<std::string>() << "\n";
    }
}

// The certificate `keys allow` was given: a path, or, when no such file is here, the name of one
// in the keys folder (`glassbox keys new host-b` then `glassbox keys allow host-b.key`, on the
// broker's own host).
std::string certificate_path(const KeysOptions& options) {
    std::error_code ec;
    if (fs::exists(options.name, ec) || options.name.find('/') != std::string::npos)
        return options.name;
    const fs::path in_folder = options.folder() / options.name;
    return fs::exists(in_folder, ec) ? in_folder.string() : options.name;
}

void run_allow(const KeysOptions& options) {
    auto certificate = bus::read_public_certificate(certificate_path(options));
    if (!certificate) fail(certificate.error());
    if (certificate.value().name.empty()) {
        fail(base::make_error(base::ErrorType::kInvalidRequest,
                              options.name + " names no key (metadata name)"));
    }
    const fs::path allowed = options.folder() / "allowed";
    ensure_folder(options);
    if (auto made = base::ensure_owner_only_folder(allowed); !made) fail(made.error());
    certificate.value().secret_key.clear();  // the broker keeps public keys only
    if (!options.as.empty()) {
        if (!bus::is_key_name(options.as)) {
            fail(base::make_error(
                base::ErrorType::kInvalidRequest,
                "--as: a key name is letters, digits, '.', '-' and '_' (up to 128)"));
        }
        certificate.value().name = options.as;
    }
    const fs::path target = bus::public_certificate_path(allowed, certificate.value().name);
    // Every host may call its pair `worker`: the allowed copies need names of their own, or the
    // broker's log could not tell them apart and one would replace another.
    if (auto existing = bus::read_public_certificate(target);
        existing && existing.value().public_key != certificate.value().public_key) {
        fail(base::make_error(base::ErrorType::kInvalidRequest,
                              "another key is allowed as '" + certificate.value().name + "' (" +
                                  target.string() +
                                  "); allow this one under a name of its own: --as NAME"));
    }
    if (auto written =
            base::write_owner_only_file(target, bus::public_certificate_text(certificate.value()));
        !written) {
        fail(written.error());
    }
    std::cout << "allowed '" << certificate.value().name << "' ("
              << certificate.value().roles.to_string() << "): " << target.string()
              << "; a running broker reads it within a second\n";
}

void run_init(const KeysOptions& options) {
    const fs::path home = resolve_home(options.home);
    if (auto made = base::ensure_home_folder(home); !made) fail(made.error());
    if (auto keys = ensure_local_keys(home); !keys) fail(keys.error());
    std::cout << "keys in " << keys_folder(home).string()
              << " (broker, client, worker, collector); allowed: " << allowed_folder(home).string()
              << "\n";
}

}  // namespace

void add_keys_command(CLI::App& app) {
    auto options = std::make_shared<KeysOptions>();
    CLI::App* keys = app.add_subcommand(
        "keys", "CURVE key pairs and the broker's allowed keys (docs/security.md)");
    keys->require_subcommand(1);
    const auto common = [&](CLI::App* sub) {
        sub->add_option("--home", options->home,
                        "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
        sub->add_option("--dir", options->dir, "Keys folder (default <home>/keys)");
        sub->add_flag("--json", options->json, "Machine-readable JSON output");
    };

    CLI::App* made = keys->add_subcommand(
        "new", "Make a key pair: NAME.key (public) and NAME.key_secret (owner-only)");
    made->add_option("name", options->name, "Key name (letters, digits, . - _)")->required();
    made->add_option("--role,--roles", options->roles,
                     "What the key may do: client, subscriber, collector, worker:<service>, "
                     "worker:* (repeatable)");
    made->add_flag("--force", options->force, "Replace an existing pair of that name");
    common(made);
    made->callback([options] { run_new(*options); });

    CLI::App* show =
        keys->add_subcommand("show", "Print a key's public key (NAME or FILE), or list every key");
    show->add_option("name", options->name, "Key name in the keys folder, or a certificate file");
    common(show);
    show->callback([options] { run_show(*options); });

    CLI::App* allow = keys->add_subcommand(
        "allow", "Let a key connect: copy its public certificate into <keys>/allowed");
    allow
        ->add_option(
            "file", options->name,
            "A public certificate: a path, or NAME.key in the keys folder (from glassbox keys new)")
        ->required();
    allow->add_option("--as", options->as,
                      "The name it is allowed under (default: the certificate's name)");
    common(allow);
    allow->callback([options] { run_allow(*options); });

    CLI::App* init =
        keys->add_subcommand("init", "Make the home's local key set (what glassbox up does)");
    common(init);
    init->callback([options] { run_init(*options); });
}

}  // namespace glassbox::cli
