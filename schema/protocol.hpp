// Frame constants of the glassbox bus protocol (docs/protocol.md), shared by broker, workers and
// clients.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace glassbox::schema::protocol {

// Headers (the frame after the empty delimiter), docs/protocol.md §1.
inline constexpr std::string_view kMdpClient = "MDPC01";
inline constexpr std::string_view kGbClient = "GBC01";
inline constexpr std::string_view kMdpWorker = "MDPW01";
inline constexpr std::string_view kGbCollector = "GBE01";
// Sixth READY frame: the worker speaks the glassbox extension (§5.1).
inline constexpr std::string_view kGbWorkerCapability = "GBW01";

// GBC01 commands (§4).
namespace client_cmd {
inline constexpr char kRequest = 0x01;
inline constexpr char kPartial = 0x02;
inline constexpr char kFinal = 0x03;
inline constexpr char kCancel = 0x04;
inline constexpr char kError = 0x05;
inline constexpr char kHeartbeat = 0x06;
}  // namespace client_cmd

// MDPW01 commands: 7/MDP's 0x01-0x05, glassbox extension 0x06-0x09 (§5).
namespace worker_cmd {
inline constexpr char kReady = 0x01;
inline constexpr char kRequest = 0x02;
inline constexpr char kReply = 0x03;
inline constexpr char kHeartbeat = 0x04;
inline constexpr char kDisconnect = 0x05;
inline constexpr char kPartial = 0x06;
inline constexpr char kExplain = 0x07;
inline constexpr char kError = 0x08;
inline constexpr char kCancel = 0x09;
}  // namespace worker_cmd

// GBE01 commands (§6.1).
namespace collector_cmd {
inline constexpr char kAttach = 0x01;
inline constexpr char kDeliver = 0x02;
inline constexpr char kAck = 0x03;
inline constexpr char kHeartbeat = 0x04;
inline constexpr char kDetach = 0x05;
}  // namespace collector_cmd

// PARTIAL kinds (§4.2).
inline constexpr std::string_view kKindData = "data";
inline constexpr std::string_view kKindExplain = "explain";

// EXPLAIN states (§5.3).
inline constexpr std::string_view kStateOpen = "open";
inline constexpr std::string_view kStateComplete = "complete";
inline constexpr std::string_view kStateError = "error";

// Topic prefix on the XPUB endpoint (§6.2).
inline constexpr std::string_view kExplainTopicPrefix = "explain.";

// Broker-served services (§7).
inline constexpr std::string_view kMmiPrefix = "mmi.";
inline constexpr std::string_view kMmiService = "mmi.service";
inline constexpr std::string_view kMmiStatus = "mmi.status";

// Limits fixed by the protocol itself (configurable limits live in the broker's config).
inline constexpr std::size_t kMaxFrames = 64;
inline constexpr std::size_t kMaxServiceName = 255;
inline constexpr std::size_t kMaxRequestId = 64;
inline constexpr std::size_t kMaxToken = 64;
inline constexpr std::size_t kMaxAsciiIntDigits = 19;
// Requests a GBW01 worker may hold at once, declared in READY (§5.1); 1 when not declared.
inline constexpr std::uint64_t kMaxWorkerCredit = 1024;

// Defaults shared by every peer (§5.2).
inline constexpr std::chrono::milliseconds kDefaultHeartbeat{2500};
inline constexpr int kDefaultLiveness = 3;
// The broker's default max_message_bytes (§1.1): a larger message is refused with MessageTooLarge.
inline constexpr std::size_t kDefaultMaxMessageBytes = std::size_t{16} * 1024 * 1024;

// A service name as §1.1 defines it: 1-255 bytes of printable ASCII.
bool is_valid_service_name(std::string_view name) noexcept;

// Parses an ascii-int frame (§1.1); nullopt for anything else.
std::optional<std::uint64_t> parse_ascii_int(std::string_view frame) noexcept;

}  // namespace glassbox::schema::protocol
