import CCurl

/// A libcurl call that did not succeed: which call, and libcurl's own words for its code.
public struct CurlError: Error, CustomStringConvertible {
    public let call: String
    public let code: Int32
    public let text: String

    public init(call: String, code: Int32, text: String) {
        self.call = call
        self.code = code
        self.text = text
    }

    public var description: String { "\(call) failed: \(text) (code \(code))" }

    public static func check(_ code: CURLcode, _ call: @autoclosure () -> String) throws {
        guard code != CURLE_OK else { return }
        throw CurlError(call: call(), code: Int32(code.rawValue), text: String(cString: curl_easy_strerror(code)))
    }

    public static func check(_ code: CURLMcode, _ call: @autoclosure () -> String) throws {
        guard code != CURLM_OK else { return }
        throw CurlError(call: call(), code: code.rawValue, text: String(cString: curl_multi_strerror(code)))
    }
}
