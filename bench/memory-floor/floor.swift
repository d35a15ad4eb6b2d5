import CCurlFloor
import Glibc
// The floor under llmspool's memory: Swift's runtime, libcurl with Debian's dependencies,
// the daemon's count of threads, each waiting; no code of the daemon's own.
curl_global_init(Int(CURL_GLOBAL_ALL))
let multi = curl_multi_init()
let easy = curl_easy_init()
_ = (multi, easy)
let threads = Int(CommandLine.arguments.dropFirst().first ?? "0") ?? 0
for _ in 0..<threads {
    var t = pthread_t()
    pthread_create(&t, nil, { _ in while true { sleep(1000) } }, nil)
}
sleep(1)
system("grep -E 'VmHWM|RssAnon|RssFile' /proc/\(getpid())/status | tr '\\n' ' '; echo")
