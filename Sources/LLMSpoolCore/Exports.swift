// The daemon's users see the model and the system layer through it, as one library.
@_exported import LLMSpoolModel
@_exported import LLMSpoolSystem
