// Package reactprompt holds what react tells the model: the schema of
// its analysis rounds and the instructions of its extension and answer
// rounds.
package reactprompt

import (
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Analysis is what react reads of an analysis round's value.
type Analysis struct {
	Analysis        string  `json:"analysis"`
	ExtensionNeeded bool    `json:"extension_needed"`
	Milestone       *string `json:"milestone"`
	ActionStrategy  *string `json:"action_strategy"`
	ActionBatchSize *int    `json:"action_batch_size"`
}

// AnalysisSchema is the response_format of the analysis rounds;
// operate adds action_required and action_requests to it.
var AnalysisSchema = json.RawMessage(`{
  "title": "ReActAnalysis",
  "description": "One step of a reason-and-act loop: think about the task, plan the actions that move it forward, ask for the tool calls to run now, and say whether another round is needed before the final answer.",
  "type": "object",
  "properties": {
    "analysis": {"type": "string", "description": "Your reasoning about the task so far, including what earlier actions returned."},
    "planned_actions": {
      "type": "array",
      "description": "The actions you intend to take, in order.",
      "items": {
        "type": "object",
        "properties": {
          "action_type": {"type": "string", "description": "The kind of action, usually a tool name."},
          "description": {"type": "string", "description": "What the action does and why."}
        },
        "required": ["action_type", "description"]
      }
    },
    "extension_needed": {"type": "boolean", "description": "True when another analysis round is needed before the final answer (for example to look at the results of the actions asked for now)."},
    "milestone": {"type": ["string", "null"], "description": "The intermediate goal this round reaches."},
    "action_strategy": {"type": "string", "enum": ["sequential", "concurrent", "batch"], "description": "How the actions of the next round should run."},
    "action_batch_size": {"type": ["integer", "null"], "minimum": 1, "description": "With the batch strategy, how many actions run together."}
  },
  "required": ["analysis", "extension_needed"]
}`)

// Extension is the instruction of extension round n, after the
// analysis a, with left rounds allowed (this one included).
func Extension(a *Analysis, n, left int) string {
	concluded := wire.Truncate(a.Analysis, 2000)
	if a.Milestone != nil && *a.Milestone != "" {
		concluded += " (milestone: " + wire.Truncate(*a.Milestone, 500) + ")"
	}
	return fmt.Sprintf("This is extension round %d of the task above. In your last round you concluded: %s\n"+
		"The outcomes of the actions you asked for are in the conversation. Continue the analysis and ask for "+
		"further actions if they help. You may use %d more extension round(s) after this one; set "+
		"extension_needed to true only if you need another round before the final answer.",
		n, concluded, left-1)
}

// Answer is the instruction of the final round.
func Answer(instruction any) string {
	return "Using your analysis and the outcomes of the actions above, give the final answer to the original " +
		"request: " + jsonval.Text(instruction)
}
