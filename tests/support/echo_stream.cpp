// Checks of one echo request's reply stream.
#include "tests/support/echo_stream.hpp"

#include <sstream>

namespace glassbox::integration {

EchoStream split_stream(const std::vector<GbcMessage>& messages) {
    EchoStream s;
    for (const auto& m : messages) {
        if (m.is_partial("data")) {
            s.data.push_back(m.json());
            s.order.emplace_back("data");
        } else if (m.is_partial("explain")) {
            s.explain.push_back(m.json());
            s.order.emplace_back("explain");
        } else if (m.is_final()) {
            s.terminals.push_back(m);
            s.order.emplace_back("final");
        } else if (m.is_error()) {
            s.terminals.push_back(m);
            s.order.emplace_back("error");
        } else {
            s.malformed.push_back(m);
            s.order.emplace_back("malformed");
        }
    }
    return s;
}

std::string describe(const std::vector<GbcMessage>& messages) {
    std::ostringstream out;
    out << messages.size() << " messages:";
    for (const auto& m : messages) {
        auto text = m.describe();
        if (text.size() > 300) {
            text = text.substr(0, 300) + "...";
        }
        out << "\n  " << text;
    }
    return out.str();
}

::testing::AssertionResult is_complete_echo_stream(const std::vector<GbcMessage>& messages,
                                                   const nlohmann::json& body, int partials) {
    auto fail = [&](const std::string& why) {
        return ::testing::AssertionFailure() << why << "\n" << describe(messages);
    };
    const auto s = split_stream(messages);
    if (!s.malformed.empty()) {
        return fail("malformed message in the stream");
    }
    if (s.terminals.size() != 1) {
        return fail("expected exactly one terminal message, got " +
                    std::to_string(s.terminals.size()));
    }
    if (s.order.back() != "final") {
        return fail("the terminal message is not last, or is not FINAL");
    }
    if (static_cast<int>(s.data.size()) != partials) {
        return fail("expected " + std::to_string(partials) + " data partials, got " +
                    std::to_string(s.data.size()));
    }
    // Echo's data partials are {"text": question, "index": i}, i = 0, 1, ... in send order.
    for (std::size_t i = 0; i < s.data.size(); ++i) {
        const auto& d = s.data[i];
        if (!d.is_object() ||
            d.value("text", nlohmann::json()) != body.value("question", nlohmann::json()) ||
            !d.contains("index") || !d["index"].is_number_unsigned() ||
            d["index"].get<std::size_t>() != i) {
            return fail("data partial #" + std::to_string(i) +
                        " is not {\"text\": question, \"index\": " + std::to_string(i) +
                        "}: " + d.dump());
        }
    }
    const auto final_body = s.terminals.front().json();
    if (!final_body.is_object() || final_body.value("echo", nlohmann::json()) != body) {
        return fail("FINAL does not echo the request body " + body.dump());
    }
    const auto session = final_body.value("session", std::string{});
    if (session.empty()) {
        return fail("FINAL names no session");
    }
    if (s.explain.size() < 2) {
        return fail("expected at least two explain messages (Question ... Synthesis)");
    }
    for (std::size_t i = 0; i < s.explain.size(); ++i) {
        const auto& e = s.explain[i];
        if (!e.is_object() || e.value("message_type", "") != "explain") {
            return fail("explain #" + std::to_string(i) + " is not an explain message");
        }
        if (e.value("session", "") != session) {
            return fail("explain #" + std::to_string(i) + " names another session");
        }
        if (!e.contains("seq") || !e["seq"].is_number_unsigned() ||
            e["seq"].get<std::size_t>() != i) {
            return fail("explain #" + std::to_string(i) + " has seq " +
                        (e.contains("seq") ? e["seq"].dump() : std::string("(none)")));
        }
        const bool last = i + 1 == s.explain.size();
        if (e.value("end_of_trace", false) != last) {
            return fail("end_of_trace set on explain #" + std::to_string(i));
        }
    }
    if (s.explain.back().value("trace_status", "") != "complete") {
        return fail("the last explain's trace_status is not complete");
    }
    return ::testing::AssertionSuccess();
}

}  // namespace glassbox::integration
