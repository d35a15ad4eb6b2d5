import CCurl
import Testing
@testable import LLMSpoolCore

/// Every CURLcode is checked: an option libcurl refuses is an error naming the call.
@Suite struct CurlHandleTests {
    @Test func aRefusedOptionIsAnErrorNamingIt() throws {
        let handle = try #require(curl_easy_init())
        defer { curl_easy_cleanup(handle) }
        try CurlHandle.set(handle, CURLOPT_POST, 1)
        do {
            try CurlHandle.set(handle, CURLoption(rawValue: 99_999), 1)
            Issue.record("libcurl took an option that does not exist")
        } catch let error as CurlError {
            #expect(error.code == Int32(CURLE_UNKNOWN_OPTION.rawValue))
            #expect(error.description.contains("curl_easy_setopt(option 99999)"), "\(error)")
        }
        #expect(throws: CurlError.self) { try CurlHandle.set(handle, CURLOPT_URL, string: String(repeating: "x", count: 9_000_000)) }
    }

    @Test func multiCodesAreNamedByLibcurl() throws {
        #expect(throws: CurlError.self) { try CurlError.check(CURLM_BAD_HANDLE, "curl_multi_add_handle") }
        #expect(throws: Never.self) { try CurlError.check(CURLM_OK, "curl_multi_add_handle") }
        #expect(throws: Never.self) { try CurlError.check(CURLE_OK, "curl_easy_setopt") }
    }
}
