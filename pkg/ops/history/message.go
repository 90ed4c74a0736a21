package history

import (
	"time"

	"github.com/google/uuid"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Content keys of the message kinds (see package wire).
const (
	KeySystemMessage     = wire.KeySystemMessage
	KeyInstruction       = wire.KeyInstruction
	KeyGuidance          = wire.KeyGuidance
	KeyContext           = wire.KeyContext
	KeyResponseFormat    = wire.KeyResponseFormat
	KeyToolSchemas       = wire.KeyToolSchemas
	KeyPlainContent      = wire.KeyPlainContent
	KeyAssistantResponse = wire.KeyAssistantResponse
	KeyFunction          = wire.KeyFunction
	KeyArguments         = wire.KeyArguments
	KeyOutput            = wire.KeyOutput
	KeyError             = wire.KeyError
	KeyActionRequestID   = wire.KeyActionRequestID
	KeyActionResponseID  = wire.KeyActionResponseID
)

// Metadata keys of assistant responses.
const (
	// MetaModelResponse holds the provider's raw response.
	MetaModelResponse = "model_response"
	// MetaOriginalModelResponse holds the first raw response when a
	// reformat round replaced model_response.
	MetaOriginalModelResponse = "original_model_response"
	// MetaUsage holds the token usage of the call(s) that produced the message.
	MetaUsage = "usage"
	// MetaModel is the model reference ("provider:model") that answered.
	MetaModel = "model"
)

// InstructionSpec holds the fields of an instruction message. Empty fields
// are left out of the message content.
type InstructionSpec struct {
	// Instruction is the task: a string or any JSON value.
	Instruction any
	// Guidance is how to go about it: a string or any JSON value.
	Guidance any
	// Context is extra material, one entry per item.
	Context []any
	// ResponseFormat is the JSON Schema the answer must satisfy.
	ResponseFormat map[string]any
	// ToolSchemas describes the tools the model may request.
	ToolSchemas []any
	// PlainContent, when set, is sent verbatim instead of the rendered fields.
	PlainContent string
	// Sender and Recipient are free-form message addresses.
	Sender, Recipient string
}

// NewSystemMessage returns a system message.
func NewSystemMessage(text string, at time.Time) Message {
	return Message{
		ID: uuid.NewString(), Kind: KindSystem, Role: RoleSystem, CreatedAt: at,
		Sender: string(RoleSystem), Recipient: string(RoleAssistant),
		Content: map[string]any{KeySystemMessage: text},
	}
}

// NewInstructionMessage returns an instruction (role user) message.
func NewInstructionMessage(spec InstructionSpec, at time.Time) Message {
	c := map[string]any{}
	setNonEmpty(c, KeyInstruction, spec.Instruction)
	setNonEmpty(c, KeyGuidance, spec.Guidance)
	if len(spec.Context) > 0 {
		c[KeyContext] = jsonval.Copy(append([]any(nil), spec.Context...))
	}
	if len(spec.ResponseFormat) > 0 {
		c[KeyResponseFormat] = jsonval.CopyMap(spec.ResponseFormat)
	}
	if len(spec.ToolSchemas) > 0 {
		c[KeyToolSchemas] = jsonval.Copy(append([]any(nil), spec.ToolSchemas...))
	}
	if spec.PlainContent != "" {
		c[KeyPlainContent] = spec.PlainContent
	}
	sender := spec.Sender
	if sender == "" {
		sender = string(RoleUser)
	}
	return Message{
		ID: uuid.NewString(), Kind: KindInstruction, Role: RoleUser, CreatedAt: at,
		Sender: sender, Recipient: spec.Recipient, Content: c,
	}
}

// NewAssistantResponse returns an assistant response holding text, with the
// provider's raw response (if any) in metadata.model_response.
func NewAssistantResponse(text string, raw any, at time.Time) Message {
	m := Message{
		ID: uuid.NewString(), Kind: KindAssistantResponse, Role: RoleAssistant, CreatedAt: at,
		Sender: string(RoleAssistant), Recipient: string(RoleUser),
		Content: map[string]any{KeyAssistantResponse: text},
	}
	if raw != nil {
		m.Metadata = map[string]any{MetaModelResponse: raw}
	}
	return m
}

// NewActionRequest returns an action request for function with arguments.
func NewActionRequest(function string, arguments map[string]any, at time.Time) Message {
	if arguments == nil {
		arguments = map[string]any{}
	}
	return Message{
		ID: uuid.NewString(), Kind: KindActionRequest, Role: RoleAction, CreatedAt: at,
		Sender: string(RoleAssistant),
		Content: map[string]any{
			KeyFunction: function, KeyArguments: jsonval.CopyMap(arguments), KeyActionResponseID: nil,
		},
	}
}

// NewActionResponse returns the response to req and links the two: the
// response's action_request_id is req's id, and req's action_response_id is
// set to the response's id (req is modified). errText, when not empty, is
// the failure the tool reported.
func NewActionResponse(req *Message, output any, errText string, at time.Time) Message {
	c := map[string]any{
		KeyFunction:        req.Content[KeyFunction],
		KeyArguments:       jsonval.Copy(req.Content[KeyArguments]),
		KeyOutput:          jsonval.Copy(output),
		KeyActionRequestID: req.ID,
	}
	if errText != "" {
		c[KeyError] = errText
	}
	m := Message{ID: uuid.NewString(), Kind: KindActionResponse, Role: RoleAction, CreatedAt: at, Content: c}
	if req.Content == nil {
		req.Content = map[string]any{}
	}
	req.Content[KeyActionResponseID] = m.ID
	return m
}

func setNonEmpty(c map[string]any, key string, v any) {
	if jsonval.IsEmpty(v) {
		return
	}
	c[key] = jsonval.Copy(v)
}
