// A small registry of every kind of setting, shared by the config unit tests.
#pragma once

#include "config/setting.hpp"

namespace glassbox::config::testing {

inline Registry test_registry() {
    return Registry{{
        text_setting("broker.endpoint", "tcp://127.0.0.1:5555", "request endpoint")
            .flag("--broker")
            .env_alias("GLASSBOX_BROKER"),
        integer_setting("broker.heartbeat_ms", 2500, 10, 3'600'000, "heartbeat")
            .flag("--heartbeat-ms"),
        integer_setting("broker.max_queue", 10'000, 1, std::numeric_limits<std::int64_t>::max(),
                        "queue bound"),
        choice_setting("broker.overflow", "reject", {"reject", "drop-oldest"}, "overflow policy")
            .flag("--overflow"),
        number_setting("gateway.rate_limit", 50, 0, 1e9, "rate"),
        bool_setting("up.gateway", true, "start the gateway").flag("--no-gateway"),
        integer_setting("graph_rag.entity_limit", 50, 1, 1000, "entities"),
        choice_setting("log.format", "human", {"human", "json"}, "log format"),
        text_setting("redaction.rules", "", "rule names").structured_value(),
        text_setting("costs.prices", "", "prices per model").structured_value(),
    }};
}

}  // namespace glassbox::config::testing
