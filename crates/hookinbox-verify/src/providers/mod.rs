//! One module per provider. Each module's docs state the headers, the signed
//! bytes, the tolerance, the event id source and its stability across
//! retries, and the provider's redelivery window.

pub mod adyen;
pub mod airwallex;
pub mod calendly;
pub mod chargebee;
pub mod checkout_com;
pub mod coinbase_commerce;
pub mod customer_io;
pub mod discord;
pub mod dwolla;
pub mod flutterwave;
pub mod generic_hmac;
pub mod github;
pub mod gitlab;
pub mod gocardless;
pub mod helpscout;
pub mod hubspot;
pub mod intercom;
pub mod lab;
pub mod lemonsqueezy;
pub mod linear;
pub mod mailgun;
pub mod meta;
pub mod modern_treasury;
pub mod orb;
pub mod paddle;
pub mod paystack;
pub mod postmark;
pub mod razorpay;
pub mod recurly;
pub mod segment;
pub mod sendgrid;
pub mod shopify;
pub mod slack;
pub mod square;
pub mod standard;
pub mod stripe;
pub mod telegram;
pub mod telnyx;
pub mod twilio;
pub mod twitch;
pub mod typeform;
pub mod wise;
pub mod xero;
pub mod zoom;
