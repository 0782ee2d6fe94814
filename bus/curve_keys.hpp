// CURVE key pairs and certificates (the ZeroMQ certificate text format), peer roles, and the
// keys of a CURVE client (docs/security.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::bus {

// A CURVE key in Z85 text: 32 bytes as 40 characters.
inline constexpr std::size_t kZ85KeyLength = 40;
bool is_z85_key(std::string_view text) noexcept;

// What a key may do on the bus. Roles are written `client`, `subscriber`, `collector`,
// `worker:<service>` or `worker:*` (any service).
struct PeerRoles {
    bool client = false;                // may send requests (MDPC01, GBC01, mmi.)
    bool subscriber = false;            // may read the explain topic
    bool collector = false;             // may ATTACH to the reliable explain feed and ACK
    bool any_worker = false;            // may register any service
    std::vector<std::string> services;  // may register these services

    bool may_serve(std::string_view service) const noexcept;
    // The roles as written in a certificate, space-separated, in a fixed order.
    std::string to_string() const;
};

// Parses a list of role words (spaces or commas between them). kInvalidRequest naming the first
// word that is not a role.
base::Result<PeerRoles> parse_roles(std::string_view text);

// A certificate: a named public key, its roles, and (in a secret certificate) its secret key.
struct CurveCertificate {
    std::string name;
    PeerRoles roles;
    std::string public_key;  // Z85
    std::string secret_key;  // Z85; empty in a public certificate
};

// A new key pair (libzmq's zmq_curve_keypair). kInternal if libzmq has no CURVE.
base::Result<CurveCertificate> generate_certificate(std::string name, PeerRoles roles);

// The certificate texts: the public one (no secret key) and the secret one.
std::string public_certificate_text(const CurveCertificate& certificate);
std::string secret_certificate_text(const CurveCertificate& certificate);

// Reads a certificate file. A public one needs `public-key`; a secret one (read_secret_...)
// needs `secret-key` too, matching the public key, and must be a regular file of this user's
// that no one else may read (mode 0600 or 0400): kInvalidRequest saying why and how to fix it.
// Malformed text: kDecodeError naming the file and line.
base::Result<CurveCertificate> read_public_certificate(const std::filesystem::path& path);
base::Result<CurveCertificate> read_secret_certificate(const std::filesystem::path& path);
// Parses certificate text (`origin` names it in errors).
base::Result<CurveCertificate> parse_certificate(std::string_view text, std::string_view origin);

// Whether `name` can name a key and its files: letters, digits, `.`, `-`, `_` (1-128; not `.`,
// `..`).
bool is_key_name(std::string_view name) noexcept;

// The file names of a certificate pair in `folder`: <name>.key and <name>.key_secret.
std::filesystem::path public_certificate_path(const std::filesystem::path& folder,
                                              std::string_view name);
std::filesystem::path secret_certificate_path(const std::filesystem::path& folder,
                                              std::string_view name);
// Writes both files (owner-only, atomically). kInvalidRequest for a name that is not a plain
// file name (letters, digits, `.`, `-`, `_`).
base::Result<void> write_certificate_pair(const std::filesystem::path& folder,
                                          const CurveCertificate& certificate);

// What a CURVE client sets on its socket before connecting (bus/detail/frame_io.hpp,
// apply_curve_client): the broker's public key and its own pair.
struct CurveClientKeys {
    std::string server_key;  // Z85
    std::string public_key;  // Z85
    std::string secret_key;  // Z85
};

// The broker's public key from a command-line value: a Z85 key itself, or the path of a
// certificate (public or secret) holding it.
base::Result<std::string> read_server_key(std::string_view value);

// Whether a ZeroMQ endpoint only reaches this machine: ipc://, inproc://, and tcp:// on
// 127.0.0.0/8, ::1 or `localhost`. A wildcard (`*`, 0.0.0.0) or any other address is not.
bool is_local_endpoint(std::string_view endpoint) noexcept;

}  // namespace glassbox::bus
