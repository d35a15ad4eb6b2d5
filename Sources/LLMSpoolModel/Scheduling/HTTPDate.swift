import FoundationEssentials

/// HTTP dates as `Retry-After` may carry them (RFC 9110 5.6.7): the IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`
/// and asctime's `Sun Nov  6 08:49:37 1994`. Read by hand: a header is hostile input, and
/// the formatters of Foundation go through ICU and a lock.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    public static func parse(_ text: String) -> Date? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.count >= 4, words.count <= 6 else { return nil }
        if words[0].hasSuffix(","), words.count == 6, words[5] == "GMT" {
            // IMF-fixdate: day month year time GMT
            guard let day = number(words[1], digits: 1...2), let month = month(words[2]),
                  let year = number(words[3], digits: 4...4) else { return nil }
            return date(year: year, month: month, day: day, time: words[4])
        }
        if words[0].hasSuffix(","), words.count == 4, words[3] == "GMT" {
            // RFC 850: day-month-yy time GMT; two-digit years from 1970 on.
            let parts = words[1].split(separator: "-").map(String.init)
            guard parts.count == 3, let day = number(parts[0], digits: 1...2), let month = month(parts[1]),
                  let short = number(parts[2], digits: 2...2) else { return nil }
            return date(year: short < 70 ? 2000 + short : 1900 + short, month: month, day: day, time: words[2])
        }
        if words.count == 5 {
            // asctime: weekday month day time year
            guard let month = month(words[1]), let day = number(words[2], digits: 1...2),
                  let year = number(words[4], digits: 4...4) else { return nil }
            return date(year: year, month: month, day: day, time: words[3])
        }
        return nil
    }

    static func number(_ text: String, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    static func month(_ text: String) -> Int? {
        months.firstIndex(of: text.lowercased()).map { $0 + 1 }
    }

    static func date(year: Int, month: Int, day: Int, time: String) -> Date? {
        let clock = time.split(separator: ":").map(String.init)
        guard clock.count == 3, let hour = number(clock[0], digits: 2...2), let minute = number(clock[1], digits: 2...2),
              let second = number(clock[2], digits: 2...2), hour < 24, minute < 60, second <= 60,
              (1...31).contains(day) else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
