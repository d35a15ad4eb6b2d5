import Testing
@testable import LLMSpoolModel

/// The descriptor uploaded from must be the file intake validated.
@Suite struct UploadCheckTests {
    let seen = FileIdentity(device: 1, inode: 2, size: 100, modifiedNanoseconds: 5)

    @Test func theSameFileIsSent() {
        #expect(UploadCheck.verify(validated: seen, current: seen, isRegularFile: true, links: 1) == .same)
    }

    @Test func aSecondLinkIsRefusedWhateverTheInode() {
        let other = FileIdentity(device: 1, inode: 9, size: 100, modifiedNanoseconds: 5)
        for current in [seen, other] {
            guard case .refuse(let problem) = UploadCheck.verify(validated: seen, current: current, isRegularFile: true, links: 2) else {
                Issue.record("a hard link passed")
                continue
            }
            #expect(problem.kind == .hardLink)
        }
    }

    @Test func anotherInodeIsANewTask() {
        let other = FileIdentity(device: 1, inode: 9, size: 100, modifiedNanoseconds: 5)
        #expect(UploadCheck.verify(validated: seen, current: other, isRegularFile: true, links: 1) == .replaced)
        let otherDevice = FileIdentity(device: 3, inode: 2, size: 100, modifiedNanoseconds: 5)
        #expect(UploadCheck.verify(validated: seen, current: otherDevice, isRegularFile: true, links: 1) == .replaced)
    }

    /// Written again in place (an editor's save, `cp`, `>`): not sent as it is, and not
    /// failed either (before, it went to failed/ and no save of it was ever sent); its new
    /// content is a new task for intake.
    @Test(arguments: [(50 as Int64, 5 as Int64), (100, 6), (200, 5)]) func aFileChangedInPlaceIsANewTask(size: Int64, modified: Int64) {
        let changed = FileIdentity(device: 1, inode: 2, size: size, modifiedNanoseconds: modified)
        #expect(UploadCheck.verify(validated: seen, current: changed, isRegularFile: true, links: 1) == .replaced)
    }

    @Test func notARegularFileIsRefused() {
        guard case .refuse(let problem) = UploadCheck.verify(validated: seen, current: seen, isRegularFile: false, links: 1) else {
            Issue.record("a non-regular file passed")
            return
        }
        #expect(problem.kind == .notRegularFile)
    }
}

/// A UTF-8 byte order mark is skipped, as most JSON readers do.
@Suite struct ByteOrderMarkTests {
    @Test func aMarkIsSkippedAndNotSent() throws {
        let body = Array(#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#.utf8)
        guard case .success(let summary) = RequestValidator.validate([0xEF, 0xBB, 0xBF] + body) else {
            Issue.record("a request with a byte order mark was refused")
            return
        }
        #expect(summary.skippedPrefix == 3)
        #expect(summary.size == body.count + 3)
        #expect(summary.usageSplice == 3, "offsets stay those of the file")
    }

    @Test func aMarkAloneOrInTheMiddleIsStillRefused() {
        guard case .failure = RequestValidator.validate([0xEF, 0xBB, 0xBF]) else { Issue.record("a mark alone passed"); return }
        guard case .failure = RequestValidator.validate(Array(#"{"model":"m","#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#""messages":[]}"#.utf8)) else {
            Issue.record("a mark inside the object passed")
            return
        }
    }
}

@Suite struct TextEscapingTests {
    @Test func bidiAndZeroWidthCharactersAreEscaped() {
        #expect(TextEscaping.escape("a\u{202E}b\u{200B}c\u{2066}d\u{FEFF}e\u{2028}f") == #"a\u{202e}b\u{200b}c\u{2066}d\u{feff}e\u{2028}f"#)
        #expect(TextEscaping.escape("é ü 日本") == "é ü 日本", "other text passes as it is")
        #expect(TextEscaping.escape("a\\x0a\n") == #"a\\x0a\x0a"#, "a backslash is escaped, so a forged escape cannot pass for one")
    }
}
