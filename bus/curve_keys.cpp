// CURVE certificates in the ZeroMQ certificate text format (ZPL: sections `metadata` and
// `curve`, four-space indented `key = "value"` lines) and roles.
#include "bus/curve_keys.hpp"

#include <zmq.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>

#include "base/owner_only.hpp"
#include "base/time_format.hpp"

namespace glassbox::bus {

namespace {

using base::ErrorType;

// Far above any real certificate: a file this large is not one.
constexpr std::size_t kMaxCertificateBytes = std::size_t{64} * 1024;

std::string_view trim(std::string_view text) noexcept {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
        text.remove_suffix(1);
    }
    return text;
}

bool is_name_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

}  // namespace

bool is_key_name(std::string_view name) noexcept {
    return !name.empty() && name.size() <= 128 && name != "." && name != ".." &&
           std::all_of(name.begin(), name.end(), is_name_char);
}

namespace {

// A ZPL value: "quoted" (no escapes in certificates) or bare up to a comment.
std::string_view zpl_value(std::string_view text) noexcept {
    text = trim(text);
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'')) {
        const auto end = text.find(text.front(), 1);
        if (end != std::string_view::npos) return text.substr(1, end - 1);
    }
    if (const auto hash = text.find('#'); hash != std::string_view::npos)
        text = text.substr(0, hash);
    return trim(text);
}

std::string header(std::string_view kind) {
    std::string text = "#   ****  Generated on " +
                       base::format_xsd_datetime(std::chrono::system_clock::now()) +
                       " by glassbox  ****\n";
    text += "#   ZeroMQ CURVE ";
    text += kind;
    text += " Certificate\n";
    return text;
}

std::string body(const CurveCertificate& certificate, bool with_secret) {
    std::string text = "\nmetadata\n    name = \"" + certificate.name + "\"\n";
    text += "    roles = \"" + certificate.roles.to_string() + "\"\n";
    text += "curve\n    public-key = \"" + certificate.public_key + "\"\n";
    if (with_secret) text += "    secret-key = \"" + certificate.secret_key + "\"\n";
    return text;
}

}  // namespace

bool is_z85_key(std::string_view text) noexcept {
    if (text.size() != kZ85KeyLength) return false;
    static constexpr std::string_view kAlphabet =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return kAlphabet.find(c) != std::string_view::npos; });
}

bool PeerRoles::may_serve(std::string_view service) const noexcept {
    return any_worker || std::find(services.begin(), services.end(), service) != services.end();
}

std::string PeerRoles::to_string() const {
    std::string text;
    const auto add = [&](std::string_view word) {
        if (!text.empty()) text += ' ';
        text += word;
    };
    if (client) add("client");
    if (subscriber) add("subscriber");
    if (collector) add("collector");
    if (any_worker) add("worker:*");
    for (const auto& service : services) add("worker:" + service);
    return text;
}

base::Result<PeerRoles> parse_roles(std::string_view text) {
    PeerRoles roles;
    std::size_t at = 0;
    while (at < text.size()) {
        const auto end = text.find_first_of(" ,\t", at);
        const std::string_view word =
            text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
        at = end == std::string_view::npos ? text.size() : end + 1;
        if (word.empty()) continue;
        if (word == "client") {
            roles.client = true;
        } else if (word == "subscriber") {
            roles.subscriber = true;
        } else if (word == "collector") {
            roles.collector = true;
        } else if (word == "worker:*") {
            roles.any_worker = true;
        } else if (word.starts_with("worker:") && word.size() > 7 && word.size() <= 7 + 255 &&
                   std::all_of(word.begin() + 7, word.end(),
                               [](char c) { return c > ' ' && c < 0x7f; })) {
            const std::string service{word.substr(7)};
            if (!roles.may_serve(service)) roles.services.push_back(service);
        } else {
            return base::make_error(
                ErrorType::kInvalidRequest,
                "unknown role '" + std::string{word.substr(0, 64)} +
                    "' (roles: client, subscriber, collector, worker:<service>, "
                    "worker:*)");
        }
    }
    return roles;
}

base::Result<CurveCertificate> generate_certificate(std::string name, PeerRoles roles) {
    std::array<char, kZ85KeyLength + 1> public_key{};
    std::array<char, kZ85KeyLength + 1> secret_key{};
    if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
        return base::make_error(
            ErrorType::kInternal,
            std::string{"cannot make a CURVE key pair: "} + zmq_strerror(zmq_errno()));
    }
    CurveCertificate certificate;
    certificate.name = std::move(name);
    certificate.roles = std::move(roles);
    certificate.public_key.assign(public_key.data(), kZ85KeyLength);
    certificate.secret_key.assign(secret_key.data(), kZ85KeyLength);
    return certificate;
}

std::string public_certificate_text(const CurveCertificate& certificate) {
    return header("Public") +
           "#   Give this file to the broker's administrator: it goes into the broker's folder of\n"
           "#   allowed keys (the roles line says what the key may do).\n" +
           body(certificate, false);
}

std::string secret_certificate_text(const CurveCertificate& certificate) {
    return header("**Secret**") +
           "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n" +
           body(certificate, true);
}

base::Result<CurveCertificate> parse_certificate(std::string_view text, std::string_view origin) {
    CurveCertificate certificate;
    std::string_view section;
    std::size_t line_number = 0;
    bool have_roles = false;
    const auto fail = [&](const std::string& why) {
        return base::make_error(
            ErrorType::kDecodeError,
            std::string{origin} + ":" + std::to_string(line_number) + ": " + why);
    };
    while (!text.empty()) {
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        ++line_number;
        const std::string_view content = trim(line);
        if (content.empty() || content.front() == '#') continue;
        const bool indented = line.front() == ' ' || line.front() == '\t';
        if (!indented) {
            section = content;
            if (section != "metadata" && section != "curve") {
                return fail("unknown section '" + std::string{section.substr(0, 32)} + "'");
            }
            continue;
        }
        const auto equals = content.find('=');
        if (equals == std::string_view::npos || section.empty()) {
            return fail("expected `name = \"value\"` inside `metadata` or `curve`");
        }
        const std::string_view key = trim(content.substr(0, equals));
        const std::string_view value = zpl_value(content.substr(equals + 1));
        if (section == "curve") {
            if (key != "public-key" && key != "secret-key") {
                return fail("unknown key '" + std::string{key.substr(0, 32)} + "' in `curve`");
            }
            if (!is_z85_key(value))
                return fail(std::string{key} + " is not a 40-character Z85 key");
            (key == "public-key" ? certificate.public_key : certificate.secret_key) =
                std::string{value};
        } else if (key == "name") {
            certificate.name = std::string{value};
        } else if (key == "roles") {
            auto roles = parse_roles(value);
            if (!roles) return fail(roles.error().message);
            certificate.roles = std::move(roles).value();
            have_roles = true;
        }
        // Other metadata (an email, a host) is kept by the format but means nothing here.
    }
    if (certificate.public_key.empty()) {
        return base::make_error(ErrorType::kDecodeError,
                                std::string{origin} + ": no `public-key` in a `curve` section");
    }
    (void)have_roles;  // a certificate without roles is valid: its key may do nothing
    return certificate;
}

namespace {

base::Result<std::string> read_small_file(const std::filesystem::path& path) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) {
        return base::make_error(ErrorType::kNotFound, "cannot read certificate " + path.string() +
                                                          ": " + error.message());
    }
    if (size > kMaxCertificateBytes) {
        return base::make_error(ErrorType::kDecodeError,
                                path.string() + " is too large to be a certificate");
    }
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
        return base::make_error(ErrorType::kNotFound, "cannot read certificate " + path.string() +
                                                          ": " + std::strerror(errno));
    }
    std::string text(static_cast<std::size_t>(size), '\0');
    const std::size_t read = std::fread(text.data(), 1, text.size(), file);
    std::fclose(file);
    text.resize(read);
    return text;
}

}  // namespace

base::Result<CurveCertificate> read_public_certificate(const std::filesystem::path& path) {
    auto text = read_small_file(path);
    if (!text) return text.error();
    return parse_certificate(text.value(), path.string());
}

base::Result<CurveCertificate> read_secret_certificate(const std::filesystem::path& path) {
    std::error_code exists_error;
    if (!std::filesystem::exists(path, exists_error)) {
        return base::make_error(ErrorType::kNotFound, "no secret key file " + path.string());
    }
    auto text = base::read_owner_only_secret(path, kMaxCertificateBytes);
    if (!text) return text.error();
    auto certificate = parse_certificate(text.value(), path.string());
    if (!certificate) return certificate.error();
    if (certificate.value().secret_key.empty()) {
        return base::make_error(
            ErrorType::kDecodeError,
            path.string() + " holds no `secret-key`: a public certificate, not a key pair");
    }
    std::array<char, kZ85KeyLength + 1> derived{};
    if (zmq_curve_public(derived.data(), certificate.value().secret_key.c_str()) != 0 ||
        std::string_view{derived.data(), kZ85KeyLength} != certificate.value().public_key) {
        return base::make_error(ErrorType::kDecodeError,
                                path.string() + ": the public key is not the secret key's");
    }
    return certificate;
}

std::filesystem::path public_certificate_path(const std::filesystem::path& folder,
                                              std::string_view name) {
    return folder / (std::string{name} + ".key");
}

std::filesystem::path secret_certificate_path(const std::filesystem::path& folder,
                                              std::string_view name) {
    return folder / (std::string{name} + ".key_secret");
}

base::Result<void> write_certificate_pair(const std::filesystem::path& folder,
                                          const CurveCertificate& certificate) {
    if (!is_key_name(certificate.name)) {
        return base::make_error(ErrorType::kInvalidRequest,
                                "a key name is letters, digits, '.', '-' and '_' (up to 128): '" +
                                    certificate.name.substr(0, 64) + "'");
    }
    if (auto written =
            base::write_owner_only_file(secret_certificate_path(folder, certificate.name),
                                        secret_certificate_text(certificate));
        !written) {
        return written;
    }
    return base::write_owner_only_file(public_certificate_path(folder, certificate.name),
                                       public_certificate_text(certificate));
}

base::Result<std::string> read_server_key(std::string_view value) {
    if (is_z85_key(value)) return std::string{value};
    auto certificate = read_public_certificate(std::filesystem::path{std::string{value}});
    if (!certificate) {
        return base::make_error(certificate.error().type,
                                "--curve-server-key is neither a Z85 key nor a certificate: " +
                                    certificate.error().message);
    }
    return certificate.value().public_key;
}

bool is_local_endpoint(std::string_view endpoint) noexcept {
    if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) return true;
    if (!endpoint.starts_with("tcp://")) return false;
    std::string_view host = endpoint.substr(6);
    // tcp://[source-address;]host:port: a source address does not change where it goes.
    if (const auto semicolon = host.find(';'); semicolon != std::string_view::npos) {
        host = host.substr(semicolon + 1);
    }
    if (host.starts_with("[")) {
        const auto close = host.find(']');
        return close != std::string_view::npos && host.substr(1, close - 1) == "::1";
    }
    if (const auto colon = host.rfind(':'); colon != std::string_view::npos)
        host = host.substr(0, colon);
    if (host == "localhost" || host == "lo") return true;
    if (!host.starts_with("127.")) return false;
    // 127.a.b.c, digits and dots only.
    return std::all_of(host.begin(), host.end(),
                       [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace glassbox::bus
