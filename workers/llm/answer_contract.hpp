// The answer contract of the synthesis templates: a first line "Answer: <short answer> [id]...",
// then the cited sentences; checked (the Answer line is there, every marker names a given id)
// and split into the short answer, its ids and the text users read.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workers/llm/prompt_template.hpp"

namespace glassbox::llm {

// A reply split by the contract.
struct ContractReply {
    std::optional<std::string>
        answer;  // the short answer ("" undecided); set for first-line templates
    std::vector<std::string> answer_ids;  // the Answer line's markers, in order, distinct
    std::string text;  // the reply without the Answer line (leading spaces skipped)
};

// The marker ids a reply may use: the "id" strings of the items of the template's `cite`
// variable; nullopt when the template names none (markers unchecked).
std::optional<std::set<std::string, std::less<>>> citable_ids(const PromptTemplate& prompt_template,
                                                              const RenderedPrompt& rendered);

// True when the template's replies are checked (it has an Answer line or cites a variable).
bool has_contract(const PromptTemplate& prompt_template) noexcept;

// Checks `reply` against the template's contract and splits it into `out`. nullopt when it
// holds, else what is wrong ("the reply does not start with an \"Answer:\" line", "marker [e9]
// names no given id (given: e1..e4)"), for the repair prompt and the error.
//
// A marker group is `[ID]` or `[ID, ID]`, ID from [A-Za-z0-9_-]{1,32}. With known ids, a group
// counts as markers when each of its ids is known or reads like one (the letters of a known id
// followed by digits: "e17" when "e1" is given); other brackets ("[sic]", "[1]") are text.
std::optional<std::string> check_reply(const PromptTemplate& prompt_template,
                                       const RenderedPrompt& rendered, std::string_view reply,
                                       ContractReply& out);

// The same with the ids given (nullptr: unchecked) and the form.
std::optional<std::string> check_reply(AnswerForm form,
                                       const std::set<std::string, std::less<>>* known,
                                       std::string_view reply, ContractReply& out);

// Streams a first-line reply without its Answer line: feed() returns the part of each piece
// that comes after the first line break (and the whitespace after it). Concatenated, what it
// returns equals ContractReply::text of the whole reply.
class AnswerLineHold {
public:
    std::string feed(std::string_view piece);

private:
    enum class State { kLead, kLine, kGap, kText };
    State state_ = State::kLead;
};

}  // namespace glassbox::llm
