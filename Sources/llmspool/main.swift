import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolStub

// The executable is argument parsing and wiring only; everything else is in LLMSpoolCore.

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "--help"
let rest = Array(arguments.dropFirst())

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("llmspool: \(message)\n".utf8))
    exit(status)
}

// --version works on every command, before anything else is checked.
let beforeSeparator = arguments.prefix { $0 != "--" }
if beforeSeparator.contains("--version") || command == "version" {
    print("llmspool \(BuildInfo.version)")
    exit(0)
}

do {
    let status: Int32
    switch command {
    case "run": status = try RunCommand.main(rest)
    case "init": status = try SetupCommand.initialize(rest)
    case "check-config": status = try SetupCommand.checkConfig(rest)
    case "stub": status = try StubCommand.main(rest)
    case "demo": status = try DemoCommand.main(rest)
    case "submit": status = try SubmitCommand.submit(rest)
    case "ask": status = try SubmitCommand.ask(rest)
    case "wait": status = try SubmitCommand.wait(rest)
    case "status": status = try StatusCommand.status(rest)
    case "queue": status = try StatusCommand.queue(rest)
    case "show": status = try StatusCommand.show(rest)
    case "retry": status = try ManageCommand.retry(rest)
    case "cancel": status = try ManageCommand.cancel(rest)
    case "hold": status = try ManageCommand.hold(rest, release: false)
    case "release": status = try ManageCommand.hold(rest, release: true)
    case "clean": status = try ManageCommand.clean(rest)
    case "-h", "--help", "help":
        print(Help.main)
        status = 0
    default:
        fail("unknown command \"\(Logger.escape(command))\"; run `llmspool --help` for the list")
    }
    exit(status)
} catch let error as Arguments.UsageError {
    fail("\(command): \(error.description); see `llmspool \(command) --help`")
} catch {
    fail("\(command): \(error)", status: 1)
}
