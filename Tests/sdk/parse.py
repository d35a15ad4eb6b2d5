"""Parses result files with the official SDKs' own types, as a program reading the spool would.

    parse.py TYPE FILE...     (TYPE: one of the names in TYPES below)

Each FILE is one JSON object, or with --jsonl, one object a line. Prints "ok N" and exits 0
when every object validates as TYPE; prints the first problem and exits 1 otherwise.
Validation is strict about the fields the type has (pydantic's model_validate), which is
what the SDKs do with an API answer.
"""
import json
import sys


def types():
    import anthropic.types
    import anthropic.types.messages
    import openai.types
    import openai.types.chat
    import openai.types.responses
    return {
        "ChatCompletion": openai.types.chat.ChatCompletion,
        "Completion": openai.types.Completion,
        "CreateEmbeddingResponse": openai.types.CreateEmbeddingResponse,
        "Response": openai.types.responses.Response,
        # One event of a Responses stream (a union, read through a TypeAdapter).
        "ResponseStreamEvent": openai.types.responses.ResponseStreamEvent,
        "Message": anthropic.types.Message,
        "Batch": openai.types.Batch,
        "MessageBatchIndividualResponse": anthropic.types.messages.MessageBatchIndividualResponse,
    }


def main(argv):
    jsonl = "--jsonl" in argv
    argv = [a for a in argv if a != "--jsonl"]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    known = types()
    if argv[0] not in known:
        print(f"unknown type {argv[0]!r}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    kind = known[argv[0]]
    if not hasattr(kind, "model_validate"):
        import pydantic
        adapter = pydantic.TypeAdapter(kind)

        class kind:  # the union's validator under the name the loop calls
            model_validate = staticmethod(adapter.validate_python)
    count = 0
    for path in argv[1:]:
        with open(path, "rb") as handle:
            objects = [line for line in handle if line.strip()] if jsonl else [handle.read()]
        for number, raw in enumerate(objects, 1):
            try:
                value = json.loads(raw)
                kind.model_validate(value)
            except Exception as error:  # the first problem, named by file and line
                where = f"{path}:{number}" if jsonl else path
                print(f"{where}: not a valid {argv[0]}: {str(error)[:2000]}")
                return 1
            count += 1
    print(f"ok {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
