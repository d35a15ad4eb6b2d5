/// The text of `--help` for each command.
enum Help {
    static let main = """
    llmspool: a spool daemon for long LLM calls. Drop an OpenAI-compatible chat-completion
    request into spool/outgoing/<id>.json; the answer appears as spool/incoming/<id>.json.
    A Markdown prompt file (spool/outgoing/<id>.md) is answered with a transcript,
    spool/incoming/<id>.md, then the .json.

    Usage: llmspool <command> [options]

    Commands:
      run      watch a spool folder and send every request dropped into it
      init     create a spool with the right folders and modes, and an example config
      check-config  validate a configuration and print the effective settings
      submit   drop a request safely (--wait follows it, printing the answer as it streams)
      ask      write a prompt file for a one-line question and drop it (--wait follows it)
      wait     follow a request someone else dropped to its end
      status   counts and requests in flight, with or without a running daemon
      queue    list the requests not finished yet: state, size, age, attempts, endpoint, reason
      show     everything known about one request
      retry    move failed requests back to outgoing
      cancel   cancel queued or running requests, or batch files
      hold     keep requests unsent until released (release puts them back)
      clean    remove old results, failures and records
      stub     serve the bundled OpenAI-compatible endpoint on 127.0.0.1
      demo     run the stub and the daemon on ./spool with the sample requests, then exit

    Every command takes --version, and --spool DIR or --config FILE where it applies: the
    spool is --spool, else the config's (--config, $LLMSPOOL_CONFIG, Config/llmspool.json,
    /etc/llmspool/config.json, the first that exists), else ./spool.

    Run `llmspool <command> --help` for a command's options.
    """

    static let run = """
    Usage: llmspool run [options]

    Watches <spool>/outgoing and sends each request to <base_url>/chat/completions.
    Stops on SIGINT or SIGTERM after letting transfers finish for the grace period;
    a second signal stops at once. Requests not finished stay in outgoing for the next run.
    SIGHUP rereads the configuration (endpoints, limits, timers, retry rules) without
    dropping transfers.

    Options:
      --spool DIR          the spool folder (default: the config's, else ./spool)
      --config FILE        a JSON config file (default: $LLMSPOOL_CONFIG, then
                           Config/llmspool.json, then /etc/llmspool/config.json, if present)
      --base-url URL       endpoint base URL including /v1 (overrides OPENAI_BASE_URL and the
                           config's base_url and endpoints list)
      --concurrency N      transfers at once (default 64)
      --log-level LEVEL    debug, info, warning or error (default info)
      --log-format FORMAT  text or json (default text; timestamps unless JOURNAL_STREAM is set)
      --metrics HOST:PORT  serve Prometheus /metrics and /healthz there (e.g. 127.0.0.1:9464)
      -h, --help           show this help

    Under systemd (Type=notify) it sends READY=1, STATUS=, STOPPING=1 and, when
    WATCHDOG_USEC is set, WATCHDOG=1 while its loops are alive.

    Environment:
      OPENAI_BASE_URL      the endpoint, as in the openai SDKs (default https://api.openai.com/v1)
      OPENAI_API_KEY       the API key (the config's api_key_env may name another variable)
      ANTHROPIC_BASE_URL   with no endpoints list, an Anthropic endpoint for Messages requests,
                           as in the Anthropic SDKs (default https://api.anthropic.com, no /v1)
      ANTHROPIC_API_KEY    its key, sent as x-api-key; setting either of these two adds the
                           Anthropic endpoint (and the OpenAI one stays only when its
                           settings or variables name it)
    An endpoint in the config's list speaks "api": "openai" (the default) or "anthropic"
    (Messages at <base_url>/v1/messages, "anthropic_version" default 2023-06-01); a
    request goes only to endpoints that speak its dialect.
    """

    static let stub = """
    Usage: llmspool stub [options]

    Serves an OpenAI-compatible /v1/chat/completions and Anthropic's /v1/messages on
    127.0.0.1 with deterministic answers ("Echo: <last user message>" then " tök1" ...), as
    server-sent events when the request has "stream": true (Messages with the real event
    sequence, message_start ... message_stop, and ping events as keep-alives). A request may carry a "stub" object to override the
    defaults: {"status": 500, "tokens": 3, "latency_ms": 100, "token_delay_ms": 50}.
    Prints "listening on http://127.0.0.1:PORT/v1" once ready.

    It also serves OpenAI's Files and Batches API (/v1/files, /v1/batches): a batch ends
    --batch-seconds after its creation (or its metadata's "stub_seconds"), its lines
    answered as above; GET /stub/batches counts the creations per metadata llmspool_group.
    A line's "stub" object may say "batch_line": "expire" (its line in the error file says
    batch_expired), "fail" (server_error, no response) or "omit" (no line at all).

    And Anthropic's Message Batches (/v1/messages/batches: create, retrieve, list with
    after_id/before_id, cancel, results at results_url), which want x-api-key and
    anthropic-version; a batch ends --batch-seconds after its creation, each request's
    params answered as /v1/messages; "batch_line" says "expire", "fail" (api_error) or
    "omit" as above; GET /stub/batches counts these creations per custom_id prefix (all
    before the last "-"). --batch-faults' create, poll and download entries apply to each API in
    its own order; GET /stub/batches also counts each group's output downloads.

    Options:
      --port N             port to listen on (default 8088; 0 picks a free one)
      --tokens N           pieces in each answer (default 8)
      --latency-ms N       delay before each answer's first byte (default 0)
      --token-delay-ms N   delay between streamed pieces (default 0)
      --batch-seconds N    how long a batch runs before it completes (default 0)
      --batch-faults LIST  faults met in order by uploads, creates, polls and output downloads,
                           such as upload:500,create:429,poll:404,create:lost,download:cut (lost: the
                           create commits and its answer is cut off; cut: half the output
                           is sent, up to a line's end, then the connection drops);
                           upload:echo_key, create:echo_key and poll:echo_key answer 401
                           with the key the call carried in the message; poll:trickle
                           sends a poll's answer one byte every half second
      --batch-ending E     completed (default), expired or failed (OpenAI: refused whole): how batches end
      -h, --help           show this help
    """

    static let demo = """
    Usage: llmspool demo [options]

    Starts the stub on a free loopback port and the daemon on the spool, drops the sample
    requests built into the binary into <spool>/outgoing, waits for each to finish, prints
    where each result landed and exits. Needs no API key and no network.

    Options:
      --spool DIR          the spool folder (default ./spool)
      --timeout SECONDS    give up after this long (default 60)
      -h, --help           show this help
    """

    static let submit = """
    Usage: llmspool submit FILE|-|BATCH.jsonl [--id ID] [--wait [--timeout SECONDS] [--progress]] [--spool DIR]

    Validates the request, writes it to a hidden file in <spool>/outgoing, fsyncs it and
    renames it into place, then prints its id (a time-sorted random one unless --id).
    A FILE ending in .md or .txt is a prompt file and keeps its ending; anything else
    (standard input too) is a JSON request.
    With --wait it follows the request to its end: the answer's text goes to stdout as it
    streams, in any dialect (for embeddings, one line: how many and of how many
    dimensions); on a terminal, stderr shows a live line (state, elapsed time, attempt,
    tokens per second, when a waiting request tries again and why), and a closing line
    with the rate. --progress prints that line when stderr is not a terminal, one line
    each time it changes. Exit status: 0 done, 1 failed or cancelled (the error on
    stderr), 124 --timeout passed (the request stays in the spool).

    A FILE ending in .jsonl is a batch: copied into outgoing as <name>.jsonl (the file's
    name, or --id), without holding it in memory. With --wait, stderr shows done/total,
    rate and ETA, and the output's path is printed at the end. Exit status: 0 every line
    succeeded, 2 some did not (or the batch was cancelled or expired), 1 it was refused
    or its output was lost (removed before it was published; the summary says failed).
    """

    static let ask = """
    Usage: llmspool ask "QUESTION" [--model M] [--system S] [--id ID] [--wait [--timeout SECONDS] [--progress]] [--spool DIR]

    Writes a prompt file (<spool>/outgoing/<id>.md) holding the question, with the model
    and system prompt given in its front matter, and drops it as submit does. Without
    --model the daemon's default_model is used. With --wait it follows the request to its
    end and prints the answer as it streams; the transcript is then
    <spool>/incoming/<id>.md. Exit status as for submit. Every argument is checked before
    anything is written.
    """

    static let wait = """
    Usage: llmspool wait ID [--timeout SECONDS] [--progress] [--spool DIR]

    Follows a request that is already in the spool, as submit --wait does (--progress
    too). Works whether the daemon is running or starts later. Exits 1 at once for a file
    the daemon leaves in outgoing because its name cannot be used (the reason on stderr).
    """

    static let status = """
    Usage: llmspool status [--json] [--watch [--interval SECONDS]] [--list] [--spool DIR | --config FILE]

    Queued, in flight (id, elapsed, bytes and tokens received, attempt, endpoint), waiting
    (next attempt, last error, and what it waits for: its back-off, an endpoint cooling
    down or paused by Retry-After), the endpoints that wait, done and failed counts, and token totals. Reads the
    folders (and the daemon's state/.daemon.json when one runs); locks nothing. --json prints
    one object with counts under queued, in_flight, waiting (also as deferred), done, failed
    and held; with --watch, one object per line (NDJSON). --list is `llmspool queue`.
    Also lists the files left in outgoing because their names cannot be used (unusable),
    and, with no daemon reporting, the batches in outgoing counted from their journals and
    the batches whose input left while no daemon ran (their end not published yet).
    """

    static let queue = """
    Usage: llmspool queue [--json] [--spool DIR | --config FILE]

    Lists the requests in outgoing, oldest first, like postqueue -p: id, state (queued,
    waiting, in-flight, draft, held, or unusable for a file left there because its name
    cannot be used, listed by its file name), size in bytes, age, attempts, endpoint, and
    why it waits. --json prints {"requests": [...]} with the same fields.
    """

    static let show = """
    Usage: llmspool show ID|BATCH [--spool DIR]

    Everything known about one request, as JSON: its state, dialect, files, attempts with timings
    and errors, endpoint and usage. For a batch's name (or NAME.jsonl): its summary once it
    ended, the record of its refusal, or its counts with "state": running, waiting (it
    cannot be started yet; why as "problem"), or ending (every line ended and its end
    cannot be published yet, or its input left). For a file queue lists as
    unusable (by its file name or its id): why it is never sent, as "problem". Exit status
    1 when the spool knows no such request or batch.
    """

    static let retry = """
    Usage: llmspool retry ID... | --all | --all-failed [--spool DIR | --config FILE]

    A failed request goes back to outgoing, with a fresh attempt count. A request still in
    outgoing that waits is sent now, like postqueue -i: the running daemon takes it within
    a second, past its own back-off and past an endpoint's cool-down (the daemon's own
    caution, as Postfix's per-destination back-off), but a provider's pause (Retry-After,
    a rate limit) still holds. --all sends every waiting request now, like postqueue -f.
    --all-failed requeues every failure but one that a later result of the same id
    replaced: that one moves (request and record) to failed/superseded/ instead.
    """

    static let cancel = """
    Usage: llmspool cancel ID|BATCH[.jsonl]... | --all [--yes] [--spool DIR | --config FILE]

    Cancels queued, waiting or running requests, as deleting their files does: a running
    transfer stops and its partial answer is removed. A batch file's name BATCH (or
    BATCH.jsonl) cancels that batch, as deleting outgoing/BATCH.jsonl does: its lines in
    flight stop, the finished ones stay, the others end with error code batch_cancelled,
    and the summary says cancelled. A batch whose every line has ended, its end waiting
    to be published, has nothing left to cancel: that is an error (exit 1), and the batch
    is left as it is. One that has not started (it cannot be, or the daemon has not read
    it yet) is removed and leaves no output. A request of the ID comes before a batch of the same
    name. A name of no request and no batch is an error (exit 1). --all cancels every
    request in outgoing (not batch files) after asking on the terminal; --yes skips the
    question (a script without it cancels nothing).
    """

    static let hold = """
    Usage: llmspool hold ID... | llmspool release ID... [--spool DIR | --config FILE]

    hold keeps requests unsent, like postsuper -h: each moves from outgoing to <spool>/hold
    (a transfer in flight stops, as when its file is deleted). release moves them back to
    outgoing, where the daemon picks them up with the attempts they had. status, show and
    queue call them held; cancel deletes a held request.
    """

    static let clean = """
    Usage: llmspool clean --older-than AGE [--spool DIR]

    Removes results (with their .sse), failed requests with their records, records of
    finished tasks, ended batches (output, errors file and summary, dated by the summary)
    and refused batch files with their records, last changed more than AGE ago (90s, 15m,
    12h, 7d, 2w). Never touches outgoing, a task still running, or a batch still running.
    A file it cannot remove is named on stderr and the rest is cleaned; the exit status is
    then 1.
    """

    static let initialize = """
    Usage: llmspool init [DIR | --spool DIR] [--config FILE] [--group GROUP] [--force]

    Creates the spool DIR (default ./spool) with outgoing, incoming, failed and state,
    mode 0700. With --group GROUP the folders belong to GROUP: outgoing is 3770 (members
    drop requests; setgid keeps them in the group, the sticky bit keeps members from
    removing each other's), the others 2750, and group_readable is on. Add a user to the
    group with: adduser USER GROUP (then log in again). It also writes a commented example configuration to FILE
    (default DIR/config.json, mode 0600) naming that spool. An existing config is kept
    unless --force. For a service: llmspool init /var/spool/llmspool --config /etc/llmspool/config.json
    """

    static let checkConfig = """
    Usage: llmspool check-config [--config FILE] [run's other options]

    Loads the configuration exactly as `run` would (file, environment, command line),
    resolves every endpoint and its key, and prints the effective settings. Keys are never
    printed: only whether one is set and where from. Exit status 1 with the problem when
    the configuration cannot be used.
    """
}
