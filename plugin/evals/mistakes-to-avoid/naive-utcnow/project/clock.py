"""Times for the reports."""
import datetime


def today():
    return datetime.date.today()
